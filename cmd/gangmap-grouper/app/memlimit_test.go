package app

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMemoryLimit: --memory-limit wins; $GOMEMLIMIT is left to the runtime; else the cgroup
// limit less 80 MiB (the binary's mapped pages, which the runtime does not count, measured
// 49 MiB of the scale run's resident set, and the soft limit's overshoot), at least half of it (v2 "max" and v1's huge value mean none).
func TestMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2max, v2, v1huge := write("v2max", "max\n"), write("v2", "536870912\n"), write("v1", "9223372036854771712\n")
	v2small, v1goal := write("v2small", "100663296\n"), write("v1goal", "268435456\n")
	old := cgroupMemoryFiles
	defer func() { cgroupMemoryFiles = old }()
	t.Setenv("GOMEMLIMIT", "")

	for _, tc := range []struct {
		name, flag string
		files      []string
		env        string
		want       int64
		source     string
	}{
		{"flag", "230Mi", []string{v2}, "", 230 << 20, "--memory-limit"},
		{"cgroup v2", "", []string{v2}, "", 432 << 20, "the memory limit less 80Mi (binary, overshoot) of " + v2},
		{"cgroup v1 of the issue's 256 MiB", "", []string{v1goal}, "", 176 << 20, "the memory limit less 80Mi (binary, overshoot) of " + v1goal},
		{"small container: half", "", []string{v2small}, "", 48 << 20, "the memory limit less 80Mi (binary, overshoot) of " + v2small},
		{"no cgroup limit", "", []string{v2max, v1huge}, "", 0, ""},
		{"env", "", []string{v2}, "300MiB", 0, "GOMEMLIMIT"},
		{"missing files", "", []string{filepath.Join(dir, "none")}, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cgroupMemoryFiles = tc.files
			t.Setenv("GOMEMLIMIT", tc.env)
			o := DefaultOptions()
			o.MemoryLimit = tc.flag
			got, source := o.memoryLimit()
			if got != tc.want || source != tc.source {
				t.Errorf("memoryLimit() = %d, %q; want %d, %q", got, source, tc.want, tc.source)
			}
		})
	}
	o := validOptions()
	o.MemoryLimit = "lots"
	if err := o.Validate(); err == nil || err.Error() != `--memory-limit: want a quantity of bytes such as 176Mi or 0, got "lots"` {
		t.Errorf("--memory-limit lots: Validate() = %v, want the flag refused", err)
	}
}
