package proctree

import "testing"

// TestParseStat: the fields after the command name, which may hold spaces
// and parentheses.
func TestParseStat(t *testing.T) {
	line := "4242 (a) b (c) S 17 4242 4242 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n"
	p, ok := parseStat(4242, line)
	if !ok || p != (proc{pid: 4242, ppid: 17, pgrp: 4242, state: 'S', start: 987654}) {
		t.Fatalf("parseStat = %+v, %v", p, ok)
	}
	if _, ok := parseStat(1, "1 (x) S 0"); ok {
		t.Fatal("a short line parsed")
	}
}
