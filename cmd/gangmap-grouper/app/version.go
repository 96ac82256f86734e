package app

import "github.com/gangmap/gangmap/internal/buildversion"

// Version is gangmap-grouper's version, set at build time with
// -ldflags "-X github.com/gangmap/gangmap/cmd/gangmap-grouper/app.Version=v0.1.0". Without it,
// the module version or VCS revision recorded by the Go toolchain is used.
var Version = ""

// version is Version, else what buildversion.Of finds in the build (as the gangmap CLI).
func version() string { return buildversion.Of(Version) }
