// Package buildversion names the version of a gangmap binary.
package buildversion

import "runtime/debug"

// Of returns set (the version given at build time with -ldflags -X) when it is not empty, else
// the module version the Go toolchain recorded, else "devel-" and the first 12 characters of the
// VCS revision, else "devel".
func Of(set string) string {
	if set != "" {
		return set
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}
