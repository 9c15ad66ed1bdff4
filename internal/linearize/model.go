// Package linearize checks recorded concurrent histories of calls to an
// fxelection.Backend (the conformance suite's Contract/Linearizable case)
// against a sequential model of the Backend contract for one election.
// The model is nondeterministic: an operation whose outcome the client
// could not see (a cancelled call, a dropped result, a store failure) may
// or may not have taken effect, and what such an operation wrote (a new
// term, a new version) stays unknown until a later result reveals it.
package linearize

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Op names an operation of the Backend contract.
type Op uint8

// The operations.
const (
	OpAcquire Op = iota
	OpRenew
	OpRelease
	OpGet
)

func (o Op) String() string {
	return [...]string{"Acquire", "Renew", "Release", "Get"}[o]
}

// Kind is the outcome of an operation as the model sees it.
type Kind uint8

// The outcomes.
const (
	OK      Kind = iota // nil error (a lease for Acquire, Renew, Get)
	Held                // *backendkit.HeldError
	Lost                // backendkit.ErrLeaseLost
	NoLease             // backendkit.ErrNoLease
	Unknown             // the call may or may not have taken effect
)

// Lease is the part of a lease the model compares.
type Lease struct {
	Holder, Incarnation, Version string
	Term                         uint64
}

func (l Lease) String() string {
	inc := l.Incarnation
	if inc == "" {
		inc = "-"
	}
	return fmt.Sprintf("%s/%s t%d v%s", l.Holder, inc, l.Term, short(l.Version))
}

// short abbreviates a version for display: versions are often long nonces.
func short(v string) string {
	if len(v) > 10 {
		return v[:4] + "…" + v[len(v)-4:]
	}
	return v
}

// Input is one call: Acquire(Identity, Incarnation), Renew(Lease),
// Release(Lease) or Get.
type Input struct {
	Op       Op
	Client   int
	Election string
	Identity string // Acquire
	Inc      string // Acquire
	Lease    Lease
}

// Output is what the call returned. For Held, Lease is the holder the
// error carried, and Version is compared only when it is not empty.
type Output struct {
	Kind  Kind
	Lease Lease
	Err   string // for display
}

// modelState is the model's state of one election. It is a comparable value
// (the checker compares states with ==).
type modelState struct {
	Held      bool
	Holder    string
	Inc       string
	Term      uint64 // valid when TermKnown
	TermKnown bool
	TermAbove uint64 // when !TermKnown: the term is greater than this
	Version   string // valid when VerKnown
	VerKnown  bool
	High      uint64 // a lower bound of the highest term handed out
	// With partial read versions: the version Get and HeldError report
	// for the record as written last, once one has been seen.
	Read      string
	ReadKnown bool
}

func (s modelState) String() string {
	if !s.Held {
		return fmt.Sprintf("free (high %d)", s.High)
	}
	term := fmt.Sprint(s.Term)
	if !s.TermKnown {
		term = fmt.Sprintf(">%d?", s.TermAbove)
	}
	ver := "?"
	if s.VerKnown {
		ver = short(s.Version)
	}
	inc := s.Inc
	if inc == "" {
		inc = "-"
	}
	return fmt.Sprintf("held %s/%s t%s v%s (high %d)", s.Holder, inc, term, ver, s.High)
}

// withTerm returns s with its term known to be t, or false if t cannot be
// its term.
func (s modelState) withTerm(t uint64) (modelState, bool) {
	if s.TermKnown {
		return s, s.Term == t
	}
	if t <= s.TermAbove {
		return s, false
	}
	s.Term, s.TermKnown, s.TermAbove, s.High = t, true, 0, max(s.High, t)
	return s, true
}

// withVersion returns s with its version known to be v, or false if v
// cannot be its version.
func (s modelState) withVersion(v string) (modelState, bool) {
	if s.VerKnown {
		return s, s.Version == v
	}
	s.Version, s.VerKnown = v, true
	return s, true
}

// holds reports whether the lease l may be the live record's (holder and
// term), and whether it certainly is, with the version the store has: then
// Renew must succeed and Release must free it.
func (s modelState) holds(l Lease) (maybe, exact bool) {
	if !s.Held || s.Holder != l.Holder {
		return false, false
	}
	if s.TermKnown {
		// Only a version the backend reports tells a stale lease from the
		// current one (a backend without versions may match on expiry).
		return s.Term == l.Term, s.Term == l.Term && l.Version != "" && s.VerKnown && s.Version == l.Version
	}
	return l.Term > s.TermAbove, false
}

// freed is s after its lease ended: free, with every term it had below
// High's successor.
func (s modelState) freed() modelState {
	high := s.High
	if s.Held {
		if s.TermKnown {
			high = max(high, s.Term)
		} else {
			high = max(high, s.TermAbove+1)
		}
	}
	return modelState{High: high}
}

// taken is s after id/inc took it with a new term (t, or unknown when
// !known) and version v (unknown when !verKnown).
func (s modelState) taken(id, inc string, t uint64, known bool, v string, verKnown bool) modelState {
	n := modelState{Held: true, Holder: id, Inc: inc, High: s.High, Version: v, VerKnown: verKnown}
	if known {
		n.Term, n.TermKnown, n.High = t, true, max(s.High, t)
	} else {
		n.TermAbove = s.High
	}
	return n
}

// continued returns the states after a re-acquisition that continued s's
// leadership with version v (unknown when !verKnown): the record's
// incarnation becomes req's, or, for a request naming none, either the old
// one or none (backends differ).
func (s modelState) continued(inc string, v string, verKnown bool) []modelState {
	s.Version, s.VerKnown = v, verKnown
	if inc != "" || s.Inc == "" {
		s.Inc = inc
		return []modelState{s}
	}
	blank := s
	blank.Inc = ""
	return []modelState{s, blank}
}

// step returns every state the election can be in after in returned out
// from state s; none if it cannot. With partial, the versions Get and
// HeldError report are only compared with each other, between writes
// (electiontest.LinearizableOptions.PartialReadVersions).
func step(s modelState, in Input, out Output, partial bool) []modelState {
	if !partial {
		return step1(s, in, out)
	}
	read := in.Op == OpGet || in.Op == OpAcquire && out.Kind == Held
	if !read {
		next := step1(s, in, out)
		for i := range next {
			next[i].Read, next[i].ReadKnown = "", false
		}
		return next
	}
	// Compare the reported version with the last one read, not with the
	// written one.
	v := out.Lease.Version
	if s.ReadKnown && v != s.Read {
		return nil
	}
	t := s
	out.Lease.Version = ""
	if in.Op == OpGet {
		t.Version, t.VerKnown = "", false // matched below instead
	}
	next := step1(t, in, out)
	for i := range next {
		next[i].Version, next[i].VerKnown = s.Version, s.VerKnown
		next[i].Read, next[i].ReadKnown = v, true
	}
	return next
}

func step1(s modelState, in Input, out Output) []modelState {
	switch in.Op {
	case OpAcquire:
		return stepAcquire(s, in, out)
	case OpRenew:
		return stepRenew(s, in, out)
	case OpRelease:
		return stepRelease(s, in, out)
	case OpGet:
		return stepGet(s, out)
	}
	return nil
}

func stepAcquire(s modelState, in Input, out Output) []modelState {
	continues := s.Held && s.Holder == in.Identity && (in.Inc == "" || s.Inc == in.Inc)
	switch out.Kind {
	case OK:
		got := out.Lease
		if got.Holder != in.Identity || got.Incarnation != "" && got.Incarnation != in.Inc {
			return nil
		}
		switch {
		case s.Held && s.Holder != in.Identity:
			return nil // never over another identity's live lease
		case continues:
			n, ok := s.withTerm(got.Term)
			if !ok {
				return nil
			}
			return n.continued(in.Inc, got.Version, true)
		default: // free, or a new incarnation of the holder
			if got.Term <= s.High || s.Held && !s.TermKnown && got.Term <= s.TermAbove+1 {
				return nil
			}
			return []modelState{s.taken(in.Identity, in.Inc, got.Term, true, got.Version, true)}
		}
	case Held:
		h := out.Lease
		if !s.Held || s.Holder != h.Holder || h.Holder == in.Identity {
			return nil
		}
		n, ok := s.withTerm(h.Term)
		if !ok {
			return nil
		}
		if h.Version != "" {
			if n, ok = n.withVersion(h.Version); !ok {
				return nil
			}
		}
		return []modelState{n}
	case Unknown:
		res := []modelState{s} // no effect
		switch {
		case s.Held && s.Holder != in.Identity:
		case continues:
			res = append(res, s.continued(in.Inc, "", false)...)
		default:
			res = append(res, s.taken(in.Identity, in.Inc, 0, false, "", false))
		}
		return res
	}
	return nil
}

func stepRenew(s modelState, in Input, out Output) []modelState {
	maybe, exact := s.holds(in.Lease)
	switch out.Kind {
	case OK:
		if !maybe || out.Lease.Term != in.Lease.Term || out.Lease.Holder != in.Lease.Holder {
			return nil
		}
		n, _ := s.withTerm(in.Lease.Term)
		n.Version, n.VerKnown = out.Lease.Version, true
		return []modelState{n}
	case Lost:
		// A backend may also refuse a lease whose version is stale.
		if exact {
			return nil
		}
		return []modelState{s}
	case Unknown:
		if !maybe {
			return []modelState{s}
		}
		n, _ := s.withTerm(in.Lease.Term)
		n.Version, n.VerKnown = "", false
		return []modelState{s, n}
	}
	return nil
}

func stepRelease(s modelState, in Input, out Output) []modelState {
	maybe, exact := s.holds(in.Lease)
	switch out.Kind {
	case OK, Unknown:
		if !maybe {
			return []modelState{s}
		}
		n, _ := s.withTerm(in.Lease.Term)
		if exact && out.Kind == OK {
			return []modelState{n.freed()}
		}
		// Not certain: the version may be stale (a backend may compare it)
		// or the call may not have run.
		return []modelState{s, n.freed()}
	}
	return nil
}

func stepGet(s modelState, out Output) []modelState {
	switch out.Kind {
	case NoLease:
		if s.Held {
			return nil
		}
		return []modelState{s}
	case OK:
		g := out.Lease
		if !s.Held || s.Holder != g.Holder || g.Incarnation != "" && g.Incarnation != s.Inc {
			return nil
		}
		n, ok := s.withTerm(g.Term)
		if !ok {
			return nil
		}
		if n, ok = n.withVersion(g.Version); !ok {
			return nil
		}
		return []modelState{n}
	}
	return nil
}

// Model is the porcupine model: one partition per election.
func Model(partial bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range h {
				e := op.Input.(Input).Election
				if _, ok := by[e]; !ok {
					order = append(order, e)
				}
				by[e] = append(by[e], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, e := range order {
				out = append(out, by[e])
			}
			return out
		},
		Init: func() []any { return []any{modelState{}} },
		Step: func(state, input, output any) []any {
			next := step(state.(modelState), input.(Input), output.(Output), partial)
			out := make([]any, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		DescribeOperation: func(input, output any) string { return describeOp(input.(Input), output.(Output)) },
		DescribeState:     func(state any) string { return state.(modelState).String() },
	}
	return nm.ToModel()
}

// describeOp renders one call and its result.
func describeOp(in Input, out Output) string {
	var call string
	switch in.Op {
	case OpAcquire:
		inc := in.Inc
		if inc == "" {
			inc = "-"
		}
		call = fmt.Sprintf("Acquire(%s/%s)", in.Identity, inc)
	case OpRenew, OpRelease:
		call = fmt.Sprintf("%s(%s)", in.Op, in.Lease)
	case OpGet:
		call = "Get()"
	}
	var res string
	switch out.Kind {
	case OK:
		if in.Op == OpRelease {
			res = "nil"
		} else {
			res = out.Lease.String()
		}
	case Held:
		res = "held by " + out.Lease.String()
	case Lost:
		res = "ErrLeaseLost"
	case NoLease:
		res = "ErrNoLease"
	case Unknown:
		res = "unknown (" + out.Err + ")"
	}
	return fmt.Sprintf("c%d %s → %s", in.Client, call, res)
}

// why says which rule of the contract forbids out for in from state s,
// or "" if none does; for failure reports.
func why(s modelState, in Input, out Output, partial bool) string {
	if len(step(s, in, out, partial)) > 0 {
		return ""
	}
	maybe, exact := s.holds(in.Lease)
	switch {
	case in.Op == OpAcquire && out.Kind == OK && s.Held && s.Holder != in.Identity:
		return "Acquire succeeded over another identity's live lease"
	case in.Op == OpAcquire && out.Kind == OK && s.Held && s.Holder == in.Identity && (in.Inc == "" || s.Inc == in.Inc):
		return "a re-acquisition by the same incarnation must keep the term"
	case in.Op == OpAcquire && out.Kind == OK && out.Lease.Term <= s.High:
		return fmt.Sprintf("a new leadership (free, or a new incarnation of the holder) must get a term above %d", s.High)
	case in.Op == OpAcquire && out.Kind == OK:
		return "the lease returned is not the requester's"
	case in.Op == OpAcquire && out.Kind == Held && (!s.Held || out.Lease.Holder == in.Identity):
		return "ErrLeaseHeld while the lease is free or the requester's own identity holds it"
	case in.Op == OpAcquire && out.Kind == Held:
		return "the HeldError does not name the current holder, term and version"
	case in.Op == OpRenew && out.Kind == OK && !maybe:
		return "Renew succeeded for a lease that is not the live one"
	case in.Op == OpRenew && out.Kind == Lost && exact:
		return "Renew refused the live lease with its current version"
	case in.Op == OpGet && out.Kind == NoLease:
		return "ErrNoLease while the lease is held"
	case in.Op == OpGet && !s.Held:
		return "Get returned a holder while the lease is free"
	case in.Op == OpGet:
		return "Get does not report the current holder, term, version and incarnation"
	}
	return "no rule of the contract allows this result"
}
