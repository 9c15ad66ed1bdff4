//go:build unix

package config

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, and its
// cancellation (the context ending) kill that whole group.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killGroup kills what is left of cmd's process group after Wait (a
// process the command started and left behind). The kernel does not hand
// out a group's ID as a new pid while any member of the group lives, so
// while one is left this reaches only cmd's group; when none is, the ID
// would have to be reused, by a new group leader, between Wait and this
// call (the pid counter wrapping around in microseconds) for the signal to
// reach anything else.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH: nothing left
	}
}
