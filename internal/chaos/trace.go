package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// envTrace names a file that receives a run's event trace: every fault
// and heal, every elector event (operations with their errors included)
// and every change of the sampled leader count, one line each, in the
// order they were recorded, with the offset from the run's start. It is
// how a failed check is read after the fact: the report has the summary
// only.
const envTrace = "FXELECTION_CHAOS_TRACE"

// tracer collects a run's trace when envTrace is set; otherwise it does
// nothing. Safe for concurrent use.
type tracer struct {
	path  string
	mu    sync.Mutex
	lines []string
}

func newTracer() *tracer { return &tracer{path: os.Getenv(envTrace)} }

// on reports that the trace is kept (never for a nil tracer).
func (tr *tracer) on() bool { return tr != nil && tr.path != "" }

// add records one line at offset at by who.
func (tr *tracer) add(at time.Duration, who, format string, args ...any) {
	if !tr.on() {
		return
	}
	line := fmt.Sprintf("%12s %-12s %s", at.Round(time.Microsecond), who, fmt.Sprintf(format, args...))
	tr.mu.Lock()
	tr.lines = append(tr.lines, line)
	tr.mu.Unlock()
}

// write writes the trace to its file.
func (tr *tracer) write() error {
	if !tr.on() {
		return nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return os.WriteFile(tr.path, []byte(strings.Join(tr.lines, "\n")+"\n"), 0o644)
}
