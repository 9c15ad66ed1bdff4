package electiontest

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The sequential model of the Backend contract for one election, which the
// Contract/Linearizable case checks recorded concurrent histories against.
// It is nondeterministic: an operation whose outcome the client could not
// see (a cancelled call, a dropped result, a store failure) may or may not
// have taken effect, and what such an operation wrote (a new term, a new
// version) stays unknown until a later result reveals it.

// linOp names an operation of the Backend contract.
type linOp uint8

const (
	opAcquire linOp = iota
	opRenew
	opRelease
	opGet
)

func (o linOp) String() string {
	return [...]string{"Acquire", "Renew", "Release", "Get"}[o]
}

// linKind is the outcome of an operation as the model sees it.
type linKind uint8

const (
	outOK      linKind = iota // nil error (a lease for Acquire, Renew, Get)
	outHeld                   // *backendkit.HeldError
	outLost                   // backendkit.ErrLeaseLost
	outNoLease                // backendkit.ErrNoLease
	outUnknown                // the call may or may not have taken effect
)

// linLease is the part of a lease the model compares.
type linLease struct {
	Holder, Incarnation, Version string
	Term                         uint64
}

func (l linLease) String() string {
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

// linInput is one call: Acquire(Identity, Incarnation), Renew(Lease),
// Release(Lease) or Get.
type linInput struct {
	Op       linOp
	Client   int
	Election string
	Identity string // Acquire
	Inc      string // Acquire
	Lease    linLease
}

// linOutput is what the call returned. For outHeld, Lease is the holder the
// error carried, and Version is compared only when it is not empty.
type linOutput struct {
	Kind  linKind
	Lease linLease
	Err   string // for display
}

// linState is the model's state of one election. It is a comparable value
// (the checker compares states with ==).
type linState struct {
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

func (s linState) String() string {
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
func (s linState) withTerm(t uint64) (linState, bool) {
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
func (s linState) withVersion(v string) (linState, bool) {
	if s.VerKnown {
		return s, s.Version == v
	}
	s.Version, s.VerKnown = v, true
	return s, true
}

// holds reports whether the lease l may be the live record's (holder and
// term), and whether it certainly is, with the version the store has: then
// Renew must succeed and Release must free it.
func (s linState) holds(l linLease) (maybe, exact bool) {
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
func (s linState) freed() linState {
	high := s.High
	if s.Held {
		if s.TermKnown {
			high = max(high, s.Term)
		} else {
			high = max(high, s.TermAbove+1)
		}
	}
	return linState{High: high}
}

// taken is s after id/inc took it with a new term (t, or unknown when
// !known) and version v (unknown when !verKnown).
func (s linState) taken(id, inc string, t uint64, known bool, v string, verKnown bool) linState {
	n := linState{Held: true, Holder: id, Inc: inc, High: s.High, Version: v, VerKnown: verKnown}
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
func (s linState) continued(inc string, v string, verKnown bool) []linState {
	s.Version, s.VerKnown = v, verKnown
	if inc != "" || s.Inc == "" {
		s.Inc = inc
		return []linState{s}
	}
	blank := s
	blank.Inc = ""
	return []linState{s, blank}
}

// linStep returns every state the election can be in after in returned out
// from state s; none if it cannot. With partial, the versions Get and
// HeldError report are only compared with each other, between writes
// (LinearizableOptions.PartialReadVersions).
func linStep(s linState, in linInput, out linOutput, partial bool) []linState {
	if !partial {
		return linStep1(s, in, out)
	}
	read := in.Op == opGet || in.Op == opAcquire && out.Kind == outHeld
	if !read {
		next := linStep1(s, in, out)
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
	if in.Op == opGet {
		t.Version, t.VerKnown = "", false // matched below instead
	}
	next := linStep1(t, in, out)
	for i := range next {
		next[i].Version, next[i].VerKnown = s.Version, s.VerKnown
		next[i].Read, next[i].ReadKnown = v, true
	}
	return next
}

func linStep1(s linState, in linInput, out linOutput) []linState {
	switch in.Op {
	case opAcquire:
		return stepAcquire(s, in, out)
	case opRenew:
		return stepRenew(s, in, out)
	case opRelease:
		return stepRelease(s, in, out)
	case opGet:
		return stepGet(s, out)
	}
	return nil
}

func stepAcquire(s linState, in linInput, out linOutput) []linState {
	continues := s.Held && s.Holder == in.Identity && (in.Inc == "" || s.Inc == in.Inc)
	switch out.Kind {
	case outOK:
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
			return []linState{s.taken(in.Identity, in.Inc, got.Term, true, got.Version, true)}
		}
	case outHeld:
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
		return []linState{n}
	case outUnknown:
		res := []linState{s} // no effect
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

func stepRenew(s linState, in linInput, out linOutput) []linState {
	maybe, exact := s.holds(in.Lease)
	switch out.Kind {
	case outOK:
		if !maybe || out.Lease.Term != in.Lease.Term || out.Lease.Holder != in.Lease.Holder {
			return nil
		}
		n, _ := s.withTerm(in.Lease.Term)
		n.Version, n.VerKnown = out.Lease.Version, true
		return []linState{n}
	case outLost:
		// A backend may also refuse a lease whose version is stale.
		if exact {
			return nil
		}
		return []linState{s}
	case outUnknown:
		if !maybe {
			return []linState{s}
		}
		n, _ := s.withTerm(in.Lease.Term)
		n.Version, n.VerKnown = "", false
		return []linState{s, n}
	}
	return nil
}

func stepRelease(s linState, in linInput, out linOutput) []linState {
	maybe, exact := s.holds(in.Lease)
	switch out.Kind {
	case outOK, outUnknown:
		if !maybe {
			return []linState{s}
		}
		n, _ := s.withTerm(in.Lease.Term)
		if exact && out.Kind == outOK {
			return []linState{n.freed()}
		}
		// Not certain: the version may be stale (a backend may compare it)
		// or the call may not have run.
		return []linState{s, n.freed()}
	}
	return nil
}

func stepGet(s linState, out linOutput) []linState {
	switch out.Kind {
	case outNoLease:
		if s.Held {
			return nil
		}
		return []linState{s}
	case outOK:
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
		return []linState{n}
	}
	return nil
}

// linModel is the porcupine model: one partition per election.
func linModel(partial bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range h {
				e := op.Input.(linInput).Election
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
		Init: func() []any { return []any{linState{}} },
		Step: func(state, input, output any) []any {
			next := linStep(state.(linState), input.(linInput), output.(linOutput), partial)
			out := make([]any, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		DescribeOperation: func(input, output any) string { return describeOp(input.(linInput), output.(linOutput)) },
		DescribeState:     func(state any) string { return state.(linState).String() },
	}
	return nm.ToModel()
}

// describeOp renders one call and its result.
func describeOp(in linInput, out linOutput) string {
	var call string
	switch in.Op {
	case opAcquire:
		inc := in.Inc
		if inc == "" {
			inc = "-"
		}
		call = fmt.Sprintf("Acquire(%s/%s)", in.Identity, inc)
	case opRenew, opRelease:
		call = fmt.Sprintf("%s(%s)", in.Op, in.Lease)
	case opGet:
		call = "Get()"
	}
	var res string
	switch out.Kind {
	case outOK:
		if in.Op == opRelease {
			res = "nil"
		} else {
			res = out.Lease.String()
		}
	case outHeld:
		res = "held by " + out.Lease.String()
	case outLost:
		res = "ErrLeaseLost"
	case outNoLease:
		res = "ErrNoLease"
	case outUnknown:
		res = "unknown (" + out.Err + ")"
	}
	return fmt.Sprintf("c%d %s → %s", in.Client, call, res)
}

// linWhy says which rule of the contract forbids out for in from state s,
// or "" if none does; for failure reports.
func linWhy(s linState, in linInput, out linOutput, partial bool) string {
	if len(linStep(s, in, out, partial)) > 0 {
		return ""
	}
	maybe, exact := s.holds(in.Lease)
	switch {
	case in.Op == opAcquire && out.Kind == outOK && s.Held && s.Holder != in.Identity:
		return "Acquire succeeded over another identity's live lease"
	case in.Op == opAcquire && out.Kind == outOK && s.Held && s.Holder == in.Identity && (in.Inc == "" || s.Inc == in.Inc):
		return "a re-acquisition by the same incarnation must keep the term"
	case in.Op == opAcquire && out.Kind == outOK && out.Lease.Term <= s.High:
		return fmt.Sprintf("a new leadership (free, or a new incarnation of the holder) must get a term above %d", s.High)
	case in.Op == opAcquire && out.Kind == outOK:
		return "the lease returned is not the requester's"
	case in.Op == opAcquire && out.Kind == outHeld && (!s.Held || out.Lease.Holder == in.Identity):
		return "ErrLeaseHeld while the lease is free or the requester's own identity holds it"
	case in.Op == opAcquire && out.Kind == outHeld:
		return "the HeldError does not name the current holder, term and version"
	case in.Op == opRenew && out.Kind == outOK && !maybe:
		return "Renew succeeded for a lease that is not the live one"
	case in.Op == opRenew && out.Kind == outLost && exact:
		return "Renew refused the live lease with its current version"
	case in.Op == opGet && out.Kind == outNoLease:
		return "ErrNoLease while the lease is held"
	case in.Op == opGet && !s.Held:
		return "Get returned a holder while the lease is free"
	case in.Op == opGet:
		return "Get does not report the current holder, term, version and incarnation"
	}
	return "no rule of the contract allows this result"
}
