package app

import "runtime/debug"

// Version is gangmap-grouper's version, set at build time with
// -ldflags "-X github.com/gangmap/gangmap/cmd/gangmap-grouper/app.Version=v0.1.0". Without it,
// the module version or VCS revision recorded by the Go toolchain is used.
var Version = ""

// version is Version, else the build's module version, else its VCS revision, else "devel" (as
// the gangmap CLI's version command).
func version() string {
	if Version != "" {
		return Version
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
