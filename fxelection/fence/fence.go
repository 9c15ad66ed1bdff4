// Package fence is the store-independent part of fxelection's fencing
// guards: the fencing token (election and term), how a guard finds it in a
// leader context, and the errors every guard returns.
//
// A lease-based leader can act after it lost the lease: a process paused
// longer than LeaseDuration−RenewDeadline (a GC pause, a stopped VM, a slow
// disk) resumes still believing it leads. The fencing term makes such late
// writes harmless: the store that receives the write remembers the highest
// term it has seen for the election and refuses any lower one. Guards for
// the stores users write to live in sub-packages so importing one does not
// pull in another's SDK:
//
//   - PostgreSQL: package github.com/fxelection/fxelection/modules/postgres/pgfence
//     (a check inside the caller's own pgx.Tx).
//   - Redis: package github.com/fxelection/fxelection/modules/redis/redisfence
//     (a Lua script that checks the term and performs the write atomically).
//
// What a guard promises: once a write with term T has been accepted (and,
// for a transactional store, committed), no write with a term lower than T
// is accepted afterwards. What it does not promise: a write with an old term
// made before the new leader's first guarded write is still accepted, since
// the store has not heard of the new term yet. A new leader that must fence
// off its predecessor at once makes one guarded call without data at the
// start of its term (pgfence's Check alone, redisfence's Advance).
package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

var (
	// ErrStaleTerm means a guard refused a write because the store has
	// already seen a higher term for the election: the writer is a deposed
	// leader. Errors matching it are *StaleTermError values.
	ErrStaleTerm = errors.New("fence: stale fencing term")
	// ErrNoToken means the context carries no fencing token: it is neither
	// a leader context (OnStartedLeading, RunIfLeader) nor one made with
	// WithToken.
	ErrNoToken = errors.New("fence: no fencing token in context")
	// ErrInvalidToken means a token's election name or term is out of range
	// (term 0, a term above backendkit.MaxTerm, an empty or unprintable
	// election name).
	ErrInvalidToken = errors.New("fence: invalid fencing token")
)

// StaleTermError is returned by a guard that refused a write.
// errors.Is(err, ErrStaleTerm) is true for it.
type StaleTermError struct {
	// Election is the election whose term was stale.
	Election string
	// Term is the caller's term.
	Term uint64
	// Highest is the highest term the store has seen for the election, or 0
	// when the guard could not read it.
	Highest uint64
}

// Error implements error.
func (e *StaleTermError) Error() string {
	if e.Highest == 0 {
		return fmt.Sprintf("fence: term %d of election %q is stale", e.Term, e.Election)
	}
	return fmt.Sprintf("fence: term %d of election %q is stale (highest seen %d)", e.Term, e.Election, e.Highest)
}

// Is makes errors.Is(err, ErrStaleTerm) true.
func (e *StaleTermError) Is(target error) bool { return target == ErrStaleTerm }

// Token is a fencing token: the election and the term under which a write
// is made.
type Token struct {
	// Election is the election's name (fxelection.Config.Name).
	Election string
	// Term is the lease's term (fxelection.Lease.Term).
	Term uint64
}

// TokenOf returns the token of lease.
func TokenOf(lease fxelection.Lease) Token {
	return Token{Election: lease.Election, Term: lease.Term}
}

// Validate checks that the election name follows the rule of every election
// name (non-empty printable UTF-8 of at most backendkit.MaxNameLen bytes;
// the error never quotes it) and that the term is in
// [1, backendkit.MaxTerm]. The error matches ErrInvalidToken and names the
// bad field.
func (t Token) Validate() error {
	// The text rule of every election name (backendkit.NameProblem).
	if p := backendkit.NameProblem(t.Election); p != "" {
		return fmt.Errorf("%w: Election: %s", ErrInvalidToken, p)
	}
	switch {
	case t.Term == 0:
		return fmt.Errorf("%w: Term is 0", ErrInvalidToken)
	case t.Term > backendkit.MaxTerm:
		return fmt.Errorf("%w: Term %d exceeds %d", ErrInvalidToken, t.Term, uint64(backendkit.MaxTerm))
	}
	return nil
}

// WithToken returns ctx carrying tok, for a write whose term did not come
// from this process's leader context (a term passed along with a queued
// job, or a test). A guard reads the innermost token: tok overrides the
// token of a leader or lock context ctx was derived from, and a leader or
// lock context derived from the result carries its own token, never tok.
func WithToken(ctx context.Context, tok Token) context.Context {
	return backendkit.ContextWithToken(ctx, tok.Election, tok.Term)
}

// FromContext returns the fencing token a guard uses for ctx: the innermost
// one ctx carries, which is the lease of a leader context (OnStartedLeading,
// RunIfLeader) or of a lock's Context, or a token set with WithToken,
// whichever ctx was derived from last. So a guarded write inside
// RunIfLeader or under a lock is one call, and a leadership or lock taken
// in a context that carried another token fences with its own. It returns
// ErrNoToken when ctx carries none, and an error matching ErrInvalidToken
// for a token out of range.
func FromContext(ctx context.Context) (Token, error) {
	election, term, ok := backendkit.TokenFromContext(ctx)
	if !ok {
		return Token{}, ErrNoToken
	}
	tok := Token{Election: election, Term: term}
	if err := tok.Validate(); err != nil {
		return Token{}, err
	}
	return tok, nil
}
