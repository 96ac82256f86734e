package realkai

import "syscall"

// sysProcAttr makes the kernel SIGKILL a child when the test binary dies (a panic, go test's
// timeout) instead of leaving it running: a KAI scheduler left behind runs a scheduling cycle every
// second on a machine the whole team shares.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
