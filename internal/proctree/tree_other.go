//go:build !unix

package proctree

import (
	"errors"
	"os"
	"os/exec"
)

// killSignal ends a command where there are no process groups.
var killSignal = os.Kill

func ownGroup(*exec.Cmd) {}

// Signal, without process groups, signals the command alone.
func (t *Tree) Signal(sig os.Signal) error {
	pid, waited := t.root()
	if pid == 0 || waited {
		return errors.New("process done")
	}
	return t.cmd.Process.Signal(sig)
}

// Alive, without process groups, reports whether the command has not
// been reaped.
func (t *Tree) Alive() bool {
	pid, waited := t.root()
	return pid != 0 && !waited
}

// Reap has nothing to reap without a subreaper.
func Reap() int { return 0 }

// KillOrphans has nothing to kill without a subreaper.
func KillOrphans() int { return 0 }

// Subreaper is Linux's: elsewhere it fails with errors.ErrUnsupported.
func Subreaper() error { return errors.ErrUnsupported }

// NotDumpable is Linux's: elsewhere it fails with errors.ErrUnsupported.
func NotDumpable() error { return errors.ErrUnsupported }

func (t *Tree) root() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pid, t.waited
}
