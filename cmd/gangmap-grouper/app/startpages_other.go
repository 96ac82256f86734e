//go:build !linux

package app

// releaseBinaryPages does nothing off Linux (see startpages_linux.go).
func releaseBinaryPages() (int64, error) { return 0, nil }
