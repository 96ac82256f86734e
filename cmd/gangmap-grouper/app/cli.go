package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gangmap/gangmap/internal/buildversion"
)

// Exit codes of Main.
const (
	// ExitOK: --help, or the grouper ran and stopped cleanly.
	ExitOK = 0
	// ExitError: the grouper could not run (no cluster configuration, the manager failed).
	ExitError = 1
	// ExitUsage: the command line is wrong: an unknown flag, a value that does not parse or
	// that Validate refuses, or a positional argument.
	ExitUsage = 2
)

const usageHeader = `Usage: gangmap-grouper [flags]

gangmap-grouper groups the pods of workload kinds KAI Scheduler has no native plugin for into
KAI PodGroups, from Workload Map definitions. KAI keeps admission and placement authority.
It takes no positional arguments. Exit status: 0 on --help or a clean stop, 1 when it cannot
run (e.g. no Kubernetes configuration), 2 when the command line is wrong.

Flags:
`

// NewFlagSet is gangmap-grouper's flag set, bound to o, that prints --help on out.
func NewFlagSet(o *Options, out io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gangmap-grouper", pflag.ContinueOnError)
	o.AddFlags(fs)
	// Parse errors are returned, not printed: Main prints them once, on stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() { _, _ = fmt.Fprint(out, usageHeader+fs.FlagUsages()) }
	return fs
}

// Main is gangmap-grouper: it parses args, validates the options and runs the grouper until ctx
// ends. Errors go to stderr as "error: ..." lines, and so do the grouper's logs; --help goes to
// stdout. It returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := DefaultOptions()
	o.Zap.DestWriter = stderr
	fs := NewFlagSet(o, stdout)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		return usageError(stderr, err)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fmt.Errorf("unexpected positional argument(s) %q: gangmap-grouper takes flags only", fs.Args()))
	}
	if err := o.Validate(); err != nil {
		return usageError(stderr, err)
	}
	if err := Run(ctx, o); err != nil {
		printError(stderr, err)
		return ExitError
	}
	return ExitOK
}

func usageError(stderr io.Writer, err error) int {
	printError(stderr, err)
	_, _ = fmt.Fprintln(stderr, "Run 'gangmap-grouper --help' for usage.")
	return ExitUsage
}

// printError writes err as "error: " lines, one per joined error.
func printError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		_, _ = fmt.Fprintln(w, "error: "+line)
	}
}

// Version is gangmap-grouper's version, set at build time with
// -ldflags "-X github.com/gangmap/gangmap/cmd/gangmap-grouper/app.Version=v0.1.0". Without it,
// the module version or VCS revision recorded by the Go toolchain is used.
var Version = ""

// version is Version, else what buildversion.Of finds in the build (as the gangmap CLI).
func version() string { return buildversion.Of(Version) }
