//go:build !linux

package realkai

import "syscall"

// sysProcAttr is nil off Linux (no parent-death signal): stop the harness with Cluster.Stop.
func sysProcAttr() *syscall.SysProcAttr { return nil }
