//go:build unix

package proctree

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

const killSignal = syscall.SIGKILL

func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
}

// Signal sends sig to every member of the tree: its process group, then
// each member found in /proc (see the package doc). The error is
// syscall.ESRCH when there was no member to signal, else the first error
// other than ESRCH.
func (t *Tree) Signal(sig syscall.Signal) error {
	var first error
	sent := false
	send := func(pid int) {
		err := syscall.Kill(pid, sig)
		if err == nil || !errors.Is(err, syscall.ESRCH) {
			sent = true
			if err != nil && first == nil {
				first = err
			}
		}
	}
	pid, _ := t.root()
	if pid == 0 {
		return syscall.ESRCH
	}
	send(-pid)
	// The members the process tree shows, under the registry's lock (no
	// command is between its fork and its registration), then those only
	// the mark shows: reading every process's environment takes longer.
	registry.Lock()
	_, waited := t.root()
	ms, _ := t.members(pid, waited)
	for _, m := range ms {
		if m.pgrp != pid {
			send(m.pid)
		}
	}
	registry.Unlock()
	if !t.opts.Orphans || !subreaper.Load() {
		for _, q := range t.marked(ms) {
			send(q)
		}
	}
	if !sent {
		return syscall.ESRCH
	}
	return first
}

// marked are the processes, other than this one and the members found
// (ms), whose environment holds the tree's mark; they join the tree.
func (t *Tree) marked(ms []proc) []int {
	ps, ok := scan()
	if !ok {
		return nil
	}
	skip := map[int]bool{os.Getpid(): true}
	for _, m := range ms {
		skip[m.pid] = true
	}
	var out []int
	for q, p := range ps {
		if !skip[q] && hasMark(q, t.mark) {
			out = append(out, q)
			t.mu.Lock()
			t.known[q] = p.start
			t.mu.Unlock()
		}
	}
	return out
}

// Alive reports whether a member of the tree is left that is not a
// zombie. It reaps the zombies among this process's children that no
// Tree started (see Reap).
func (t *Tree) Alive() bool {
	registry.Lock()
	defer registry.Unlock()
	reapLocked()
	pid, waited := t.root()
	if pid == 0 {
		return false
	}
	ms, ok := t.members(pid, waited)
	for _, m := range ms {
		if !m.dead() {
			return true
		}
	}
	err := syscall.Kill(-pid, 0)
	if group := err == nil || errors.Is(err, syscall.EPERM); !group || !ok {
		return group // no /proc: the process group is all there is to see
	}
	// The group has a process the walk did not find (re-parented out of
	// this process's reach) or a zombie: look at every process.
	ms, _ = t.scanMembers(pid, waited)
	for _, m := range ms {
		if !m.dead() {
			return true
		}
	}
	return false
}

// Reap reaps every zombie child of this process that no Tree started:
// descendants re-parented to a subreaper. It returns how many it reaped.
func Reap() int {
	registry.Lock()
	defer registry.Unlock()
	return reapLocked()
}

// orphansLocked reports whether this process may have a child no Tree
// started (true when it cannot tell). The caller holds the registry lock.
func orphansLocked() bool {
	kids, ok := selfChildren()
	if !ok {
		return true
	}
	for _, k := range kids {
		if !registry.roots[k] {
			return true
		}
	}
	return false
}

func reapLocked() int {
	if !orphansLocked() {
		return 0
	}
	ps, ok := scan()
	if !ok {
		return 0
	}
	self, n := os.Getpid(), 0
	for _, p := range ps {
		if p.ppid == self && p.state == 'Z' && !registry.roots[p.pid] {
			var ws syscall.WaitStatus
			if got, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); err == nil && got == p.pid {
				n++
			}
		}
	}
	return n
}

// KillOrphans sends SIGKILL to every child of this process that no Tree
// started, and to their descendants, and reaps those already gone: what a
// subreaper does while it runs no tree with Options.Orphans. It returns
// how many processes it signalled.
func KillOrphans() int {
	registry.Lock()
	defer registry.Unlock()
	if !orphansLocked() {
		return 0
	}
	reapLocked()
	t := &Tree{opts: Options{Orphans: true}, known: map[int]uint64{}}
	ms, _ := t.members(0, true)
	n := 0
	for _, m := range ms {
		if !m.dead() && syscall.Kill(m.pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// root is the command's pid and whether it has been reaped.
func (t *Tree) root() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pid, t.waited
}

// members are the tree's processes found in /proc now (false: no /proc),
// this process never among them: those known, its descendants, and with
// Options.Orphans this process's children no Tree started and theirs (the
// mark is looked for by marked; the group is signalled as one). They are
// found by walking the kernel's children lists from there, or where it
// has none by scanning every process (then the group's members count
// too). The caller holds the registry lock.
func (t *Tree) members(pid int, waited bool) ([]proc, bool) {
	if ms, ok := t.walk(pid, waited); ok {
		return ms, true
	}
	return t.scanMembers(pid, waited)
}

// walk is members from the children lists (false: the kernel has none).
func (t *Tree) walk(pid int, waited bool) ([]proc, bool) {
	self := os.Getpid()
	var queue []int
	if pid != 0 && !waited {
		queue = append(queue, pid)
	}
	t.mu.Lock()
	known := make(map[int]uint64, len(t.known))
	for q, start := range t.known {
		known[q] = start
		queue = append(queue, q)
	}
	t.mu.Unlock()
	kids, ok := selfChildren()
	if !ok {
		return nil, false
	}
	if t.opts.Orphans {
		for _, k := range kids {
			if !registry.roots[k] {
				queue = append(queue, k)
			}
		}
	}
	in := map[int]proc{}
	for len(queue) > 0 {
		q := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, seen := in[q]; seen || q == self {
			continue
		}
		p, ok := readStat(q)
		if start, was := known[q]; !ok || was && p.start != start {
			continue // gone (its pid maybe reused)
		}
		in[q] = p
		queue = append(queue, childrenOf(q)...)
	}
	out := make([]proc, 0, len(in))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.known = make(map[int]uint64, len(in))
	for q, p := range in {
		out = append(out, p)
		t.known[q] = p.start
	}
	return out, true
}

// scanMembers is members from a scan of every process, the group's
// members included (false: no /proc).
func (t *Tree) scanMembers(pid int, waited bool) ([]proc, bool) {
	ps, ok := scan()
	if !ok {
		return nil, false
	}
	self := os.Getpid()
	t.mu.Lock()
	defer t.mu.Unlock()
	in := map[int]bool{}
	children := map[int][]int{}
	for _, p := range ps {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	for q, start := range t.known {
		if p, ok := ps[q]; ok && p.start == start {
			in[q] = true
		} else {
			delete(t.known, q)
		}
	}
	for _, p := range ps {
		switch {
		case p.pid == self || in[p.pid]:
		case pid != 0 && p.pid == pid && !waited,
			pid != 0 && p.pgrp == pid,
			t.opts.Orphans && p.ppid == self && !registry.roots[p.pid]:
			in[p.pid] = true
		}
	}
	// Their descendants.
	queue := make([]int, 0, len(in))
	for q := range in {
		queue = append(queue, q)
	}
	for len(queue) > 0 {
		q := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, c := range children[q] {
			if !in[c] && c != self {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	out := make([]proc, 0, len(in))
	for q := range in {
		p := ps[q]
		out = append(out, p)
		t.known[q] = p.start
	}
	return out, true
}

// proc is one process as /proc/PID/stat shows it.
type proc struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // clock ticks after boot
}

// dead: a zombie (or exiting) process runs nothing.
func (p proc) dead() bool { return p.state == 'Z' || p.state == 'X' || p.state == 'x' }
