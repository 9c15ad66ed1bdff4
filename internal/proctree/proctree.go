// Package proctree contains the processes a command starts. A Tree is a
// command and every process it starts, those that leave its process group
// (setsid, a daemon's double fork) included, so that a signal to the tree
// reaches all of them and the tree is gone only once all of them are.
// example-app exec's child and config.CommandCheck's health commands are
// Trees: one implementation for both.
//
// On Linux (which has /proc) a process belongs to a tree when
//
//   - it is in the tree's process group (the command leads a new one);
//   - it descends from the command or from another member;
//   - its initial environment holds the tree's mark, a variable
//     FXELECTION_TREE_<random>=1 added to the command's environment, which
//     every process it starts inherits unless one clears its environment
//     (env -i, sudo's env_reset); the mark is readable in
//     /proc/PID/environ for processes of this process's uid that are
//     dumpable, and for every process when this process runs as root;
//   - with Options.Orphans, it is a child of this process that was not
//     started through this package (in a child subreaper, see Subreaper,
//     an orphaned descendant is re-parented here), or descends from one.
//
// Elsewhere only the process group counts. A process of another uid (a
// set-uid program, a child that changed its uid) can be signalled only by
// root; a zombie counts as gone.
//
// A process that calls Subreaper must start every child through this
// package: Reap, and trees with Options.Orphans, treat its other children
// as orphans.
package proctree

import (
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// MarkPrefix starts the name of every tree's mark variable.
const MarkPrefix = "FXELECTION_TREE_"

// Options say which processes a Tree claims besides its own.
type Options struct {
	// Orphans claims every child of this process that no Tree started
	// (processes re-parented to a subreaper) and their descendants: for
	// the one tree a subreaper runs at a time (example-app exec's child).
	Orphans bool
}

// Tree is a command run as a contained tree of processes. Its methods may
// be called from several goroutines.
type Tree struct {
	cmd  *exec.Cmd
	opts Options
	mark string // "FXELECTION_TREE_<hex>=1"

	mu     sync.Mutex
	pid    int            // the command's, once started
	waited bool           // the command has been reaped: pid may be reused
	known  map[int]uint64 // members found so far: pid → start time
}

// subreaper is set once Subreaper succeeded: a tree with Options.Orphans
// then finds every process it has by the children lists alone.
var subreaper atomic.Bool

// registry holds the pids of the commands Trees started and have not yet
// reaped. Its lock is held while a command starts and while a tree is
// scanned and signalled, so no scan sees a command between its fork and
// its registration.
var registry = struct {
	sync.Mutex
	roots map[int]bool
}{roots: map[int]bool{}}

// Command makes cmd, not started yet, the command of a new Tree: it will
// lead a new process group (other SysProcAttr fields are kept), its
// environment gets the tree's mark, and, when cmd was made by
// exec.CommandContext, the context's end kills the whole tree (SIGKILL).
// Start it with Tree.Start, reap it with Tree.Wait.
func Command(cmd *exec.Cmd, opts Options) *Tree {
	var b [12]byte
	_, _ = rand.Read(b[:])
	t := &Tree{cmd: cmd, opts: opts, mark: MarkPrefix + hex.EncodeToString(b[:]) + "=1", known: map[int]uint64{}}
	cmd.Env = append(cmd.Environ(), t.mark)
	ownGroup(cmd)
	if cmd.Cancel != nil {
		cmd.Cancel = func() error { return t.Signal(killSignal) }
	}
	return t
}

// Start starts the command (exec.Cmd.Start).
func (t *Tree) Start() error {
	registry.Lock()
	defer registry.Unlock()
	if err := t.cmd.Start(); err != nil {
		return err
	}
	t.mu.Lock()
	t.pid = t.cmd.Process.Pid
	t.mu.Unlock()
	registry.roots[t.pid] = true
	return nil
}

// Wait waits for the command to exit and reaps it (exec.Cmd.Wait); the
// rest of the tree may live on: see Alive.
func (t *Tree) Wait() error {
	err := t.cmd.Wait()
	registry.Lock()
	delete(registry.roots, t.pid)
	registry.Unlock()
	t.mu.Lock()
	t.waited = true
	t.mu.Unlock()
	return err
}

// Pid is the command's process ID (0 before Start).
func (t *Tree) Pid() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pid
}

// endPoll is how often End looks whether the tree is gone.
const endPoll = 5 * time.Millisecond

// End kills what is left of the tree (SIGKILL to every member) and waits
// until it is gone, up to limit (a process in uninterruptible sleep dies
// only when it wakes); it reports whether the tree is gone.
func (t *Tree) End(limit time.Duration) bool {
	_ = t.Signal(killSignal)
	deadline := time.Now().Add(limit)
	for t.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(endPoll)
	}
	return true
}
