//go:build linux

package chaos

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// pausesSupported says this platform runs the pause workload.
const pausesSupported = true

// mono reads CLOCK_MONOTONIC in nanoseconds: one clock for the parent and
// every child process, which Go's own monotonic readings (relative to each
// process's start) are not.
func mono() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// childAttr makes a member process die with the runner.
func childAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// freeze and thaw stop and resume a process.
func freeze(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }
func thaw(pid int) error   { return syscall.Kill(pid, syscall.SIGCONT) }
