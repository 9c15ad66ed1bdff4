package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTraceTail: without a trace file a run keeps its last tailLines
// lines, oldest first, and logs them only when it failed; with one it
// writes every line.
func TestTraceTail(t *testing.T) {
	t.Setenv(envTrace, "")
	tr := newTracer()
	for i := range tailLines + 7 {
		tr.add(time.Duration(i)*time.Millisecond, "e", "line %d", i)
	}
	got := tr.ordered()
	if len(got) != tailLines || !strings.HasSuffix(got[0], "line 7") || !strings.HasSuffix(got[len(got)-1], fmt.Sprintf("line %d", tailLines+6)) {
		t.Fatalf("kept %d lines, first %q, last %q; want the last %d in order", len(got), got[0], got[len(got)-1], tailLines)
	}
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	if err := tr.finish(logf, false); err != nil || len(logged) != 0 {
		t.Fatalf("a run that passed logged its trace (%v)", err)
	}
	if err := tr.finish(logf, true); err != nil || len(logged) != 1 || !strings.Contains(logged[0], "line 7\n") {
		t.Fatalf("a failed run's log lacks its trace: %v %q", err, logged)
	}

	path := filepath.Join(t.TempDir(), "trace")
	t.Setenv(envTrace, path)
	tr = newTracer()
	for i := range tailLines + 7 {
		tr.add(0, "e", "line %d", i)
	}
	if err := tr.finish(logf, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || strings.Count(string(data), "\n") != tailLines+7 {
		t.Fatalf("trace file has %d lines (%v), want %d", strings.Count(string(data), "\n"), err, tailLines+7)
	}
	var none *tracer
	none.add(0, "e", "ignored")
	if err := none.finish(logf, true); err != nil {
		t.Fatal(err)
	}
}
