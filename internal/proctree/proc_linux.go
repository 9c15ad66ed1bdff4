package proctree

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// prctl options (linux/prctl.h).
const (
	prSetDumpable       = 4
	prSetChildSubreaper = 36
)

// Subreaper makes this process a child subreaper: a descendant whose
// parent exits is re-parented to it, not to init, so that a Tree with
// Options.Orphans finds it and Reap reaps it.
func Subreaper() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return e
	}
	subreaper.Store(true)
	return nil
}

// NotDumpable makes this process not dumpable: processes of its uid
// without CAP_SYS_PTRACE can no longer read its /proc/PID/environ, mem or
// fds, nor trace it. A program it executes is dumpable again.
func NotDumpable() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return e
	}
	return nil
}

// scan reads /proc/*/stat: every process by pid (false: no /proc).
func scan() (map[int]proc, bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	ps := make(map[int]proc, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone
		}
		if p, ok := parseStat(pid, string(raw)); ok {
			ps[pid] = p
		}
	}
	return ps, len(ps) > 0
}

// parseStat parses a /proc/PID/stat line: "pid (comm) state ppid pgrp
// session … starttime …" (comm may hold spaces and parentheses: the
// fields start after the last ')').
func parseStat(pid int, s string) (proc, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start}, true
}

// selfChildren are this process's children, from
// /proc/self/task/*/children (false: the kernel does not list children).
func selfChildren() ([]int, bool) {
	if _, err := os.Stat("/proc/thread-self/children"); err != nil {
		return nil, false
	}
	return childrenOf(os.Getpid()), true
}

// readStat reads one process's /proc/PID/stat (false: it is gone).
func readStat(pid int) (proc, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	return parseStat(pid, string(raw))
}

// childrenOf are pid's children, from /proc/PID/task/*/children (none
// when it is gone).
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		raw, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(raw)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// maxEnviron bounds how much of a process's environment is read.
const maxEnviron = 1 << 20

// hasMark reports whether pid's initial environment holds mark
// ("NAME=VALUE"); false when it cannot be read.
func hasMark(pid int, mark string) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxEnviron))
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(raw, []byte{0}) {
		if string(v) == mark {
			return true
		}
	}
	return false
}
