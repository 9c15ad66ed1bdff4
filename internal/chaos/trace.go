package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// envTrace names a file that receives a run's whole event trace: every
// fault and heal, every elector event (operations with their errors
// included) and every change of the sampled leader count, one line each,
// in the order they were recorded, with the offset from the run's start.
// Without it the trace's last tailLines lines are kept and logged when a
// check fails: the report has the summary only.
const envTrace = "FXELECTION_CHAOS_TRACE"

// tailLines is how many of the last trace lines a run keeps without a
// trace file, for the log of a failed run.
const tailLines = 400

// tracer collects a run's trace. Safe for concurrent use; a nil tracer
// records nothing.
type tracer struct {
	path  string
	mu    sync.Mutex
	lines []string // all of them with a path; otherwise a ring of tailLines
	next  int      // the ring's oldest line once it is full
}

func newTracer() *tracer { return &tracer{path: os.Getenv(envTrace)} }

// on reports that lines are recorded (never for a nil tracer).
func (tr *tracer) on() bool { return tr != nil }

// add records one line at offset at by who.
func (tr *tracer) add(at time.Duration, who, format string, args ...any) {
	if !tr.on() {
		return
	}
	line := fmt.Sprintf("%12s %-12s %s", at.Round(time.Microsecond), who, fmt.Sprintf(format, args...))
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.path != "" || len(tr.lines) < tailLines {
		tr.lines = append(tr.lines, line)
		return
	}
	tr.lines[tr.next] = line
	tr.next = (tr.next + 1) % tailLines
}

// ordered returns the lines kept, oldest first.
func (tr *tracer) ordered() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append(append([]string(nil), tr.lines[tr.next:]...), tr.lines[:tr.next]...)
}

// finish writes the trace to its file, or, when failed and there is no
// file, logs the lines kept.
func (tr *tracer) finish(logf func(string, ...any), failed bool) error {
	switch {
	case !tr.on():
		return nil
	case tr.path != "":
		return os.WriteFile(tr.path, []byte(strings.Join(tr.ordered(), "\n")+"\n"), 0o644)
	case failed:
		logf("chaos trace, last %d lines (%s=<file> keeps all):\n%s", tailLines, envTrace, strings.Join(tr.ordered(), "\n"))
	}
	return nil
}
