package linearize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// History records the calls of one run, from many goroutines at once.
type History struct {
	grace time.Duration
	start time.Time

	mu        sync.Mutex
	ops       []porcupine.Operation
	problems  []string
	ambiguous int
}

// NewHistory starts a history whose clock starts now. A call without a
// result may take effect up to grace after it returned.
func NewHistory(grace time.Duration) *History {
	return &History{grace: grace, start: time.Now()}
}

// Now is the history's clock, for a call's start and return.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Problem notes a result that breaks the contract whatever the state (the
// first 20 are kept).
func (h *History) Problem(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.problems) < 20 {
		h.problems = append(h.problems, fmt.Sprintf(format, args...))
	}
}

// Record adds one call to the history. A call without a result (Unknown)
// may take effect up to the grace after it returned, when late (it ran to
// its end); a Get without a result constrains nothing and is left out.
func (h *History) Record(in Input, out Output, call, ret int64, late bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.Kind == Unknown {
		h.ambiguous++
		if in.Op == OpGet {
			return
		}
		if late {
			ret += int64(h.grace)
		}
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: in.Client, Input: in, Output: out, Call: call, Return: ret})
}

// Classify turns a call's result into the model's output, noting in h the
// results the contract forbids whatever the state.
func (h *History) Classify(in Input, l fxelection.Lease, err error) Output {
	var he *backendkit.HeldError
	switch {
	case err == nil:
		if in.Op != OpRelease && l.Election != in.Election {
			h.Problem("%s on %s returned a lease of election %q", in.Op, in.Election, l.Election)
		}
		return Output{Kind: OK, Lease: LeaseOf(l)}
	case errors.As(err, &he) && in.Op == OpAcquire:
		return Output{Kind: Held, Lease: LeaseOf(he.Holder)}
	case errors.Is(err, backendkit.ErrLeaseLost) && in.Op == OpRenew:
		return Output{Kind: Lost}
	case errors.Is(err, backendkit.ErrNoLease) && in.Op == OpGet:
		return Output{Kind: NoLease}
	case errors.Is(err, backendkit.ErrLeaseHeld), errors.Is(err, backendkit.ErrLeaseLost), errors.Is(err, backendkit.ErrNoLease):
		h.Problem("%s returned %v, which the contract does not allow for it", in.Op, err)
	}
	return Output{Kind: Unknown, Err: errText(err)}
}

// LeaseOf is the part of l the model compares.
func LeaseOf(l fxelection.Lease) Lease {
	return Lease{Holder: l.Holder, Incarnation: l.Incarnation, Version: l.Version, Term: l.Term}
}

// errText shortens an error for the history display.
func errText(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// Verdict is the outcome of a check.
type Verdict struct {
	Result    porcupine.CheckResult
	Problems  []string // results that break the contract on their own
	Report    string   // on Illegal: the offending history, readable
	Outcomes  string   // how many calls of each kind had each outcome
	Ops       int      // calls recorded
	Ambiguous int      // calls without a result
	Checked   time.Duration
}

// Check checks the history against Model(partial) within timeout; with
// visualise, an illegal history's report names an HTML file of porcupine's
// visualisation.
func (h *History) Check(partial bool, timeout time.Duration, visualise bool) Verdict {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	v := Verdict{Problems: append([]string(nil), h.problems...), Ops: len(ops), Ambiguous: h.ambiguous}
	h.mu.Unlock()
	v.Outcomes = outcomes(ops)
	model := Model(partial)
	began := time.Now()
	v.Result = porcupine.CheckOperationsTimeout(model, ops, timeout)
	if v.Result == porcupine.Illegal {
		v.Report = report(model, ops, partial, timeout, visualise)
	}
	v.Checked = time.Since(began)
	return v
}

// report renders an illegal history readably: for the first election
// whose history is not linearizable, the longest sequence of calls the
// model could explain, the state it reached, and the calls that could not
// come next. With visualise it also writes porcupine's HTML visualisation
// to a file and names it.
func report(model porcupine.Model, ops []porcupine.Operation, partial bool, timeout time.Duration, visualise bool) string {
	var b strings.Builder
	for _, part := range model.Partition(ops) {
		if porcupine.CheckOperationsTimeout(model, part, timeout) != porcupine.Illegal {
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
		if res != porcupine.Illegal {
			continue
		}
		fmt.Fprintf(&b, "election %s: %d calls\n", part[0].Input.(Input).Election, len(part))
		var longest []porcupine.Operation
		for _, partials := range info.PartialLinearizationsOperations() {
			for _, p := range partials {
				if len(p) > len(longest) {
					longest = p
				}
			}
		}
		st := model.Init()
		var lines []string
		for _, op := range longest {
			_, st = model.Step(st, op.Input, op.Output)
			lines = append(lines, fmt.Sprintf("  [%8.3fms … %8.3fms] %s\n      ⇒ %s", ms(op.Call), ms(op.Return), model.DescribeOperation(op.Input, op.Output), model.DescribeState(st)))
		}
		const keep = 12
		if len(lines) > keep {
			fmt.Fprintf(&b, "  … %d earlier calls explained\n", len(lines)-keep)
			lines = lines[len(lines)-keep:]
		}
		b.WriteString("longest explainable order ends:\n")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		// The calls left over that began first: one of them is the call no
		// state of the model allows.
		done := map[int64]bool{}
		for _, op := range longest {
			done[op.Call<<8|int64(op.ClientId)] = true
		}
		var rest []porcupine.Operation
		for _, op := range part {
			if !done[op.Call<<8|int64(op.ClientId)] {
				rest = append(rest, op)
			}
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i].Call < rest[j].Call })
		b.WriteString("calls that cannot follow (first few by start):\n")
		for i, op := range rest {
			if i == 6 {
				break
			}
			fmt.Fprintf(&b, "  [%8.3fms … %8.3fms] %s\n", ms(op.Call), ms(op.Return), model.DescribeOperation(op.Input, op.Output))
			if states, ok := st.([]any); ok && len(states) > 0 {
				if w := why(states[0].(modelState), op.Input.(Input), op.Output.(Output), partial); w != "" {
					fmt.Fprintf(&b, "      ✗ %s\n", w)
				}
			}
		}
		if !visualise {
			break
		}
		if f, err := os.CreateTemp("", "fxelection-linearizable-*.html"); err == nil {
			if err := porcupine.Visualize(model, info, f); err == nil {
				fmt.Fprintf(&b, "visualisation: %s\n", f.Name())
			}
			_ = f.Close()
		}
		break
	}
	return b.String()
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// outcomes counts the recorded calls by operation and outcome.
func outcomes(ops []porcupine.Operation) string {
	n := map[string]int{}
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		n[fmt.Sprintf("%s %s", in.Op, [...]string{"ok", "held", "lost", "none", "unknown"}[out.Kind])]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
