package framework

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// RunWithGrouper is the TestMain body of an e2e package that runs gangmap-grouper as a process:
// it makes a work directory (*workDir: the binary and the grouper's logs), calls setUp (the
// package's control plane and what else it needs; tearDown, when not nil, runs after the tests),
// builds ./cmd/gangmap-grouper into the work directory (*bin), runs m, and keeps the work
// directory, saying where, when a test fails (removed otherwise). A set-up error fails the run
// (exit code 1), never skips it. name prefixes its messages and the directory's name.
func RunWithGrouper(m *testing.M, name string, workDir, bin *string, setUp func(ctx context.Context) (tearDown func() error, err error)) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "gangmap-e2e-"+name+"-")
	if err != nil {
		return fail(err)
	}
	*workDir = dir
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(dir)
		}
	}()
	ctx := context.Background()
	tearDown, err := setUp(ctx)
	if tearDown != nil {
		defer func() { _ = tearDown() }()
	}
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	buildCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if *bin, err = BuildGrouperBinary(buildCtx, dir); err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "%s: built gangmap-grouper in %v\n", name, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		keep = true
		fmt.Fprintf(os.Stderr, "%s: grouper logs kept in %s\n", name, dir)
	}
	return code
}
