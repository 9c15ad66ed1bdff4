package fencedcounter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// Counter is a counter in a store that fences its reads and writes with
// lock terms, as an application guards what it does under a lock: every
// call carries a term, and the store refuses a call whose term is lower
// than the highest it has seen for the key. The MutualExclusion case's
// holders each read the counter and write it plus one under their lock's
// term, as two separate calls: only mutual exclusion (or, failing that,
// the fence) keeps an increment from being lost.
type Counter interface {
	// Read returns the counter key's value (0 if it was never written).
	// It fails with an error matching fence.ErrStaleTerm if a term higher
	// than term was seen for key; otherwise it raises the key's highest
	// term to term, in the same atomic operation.
	Read(ctx context.Context, key string, term uint64) (uint64, error)

	// Write sets the counter key to value, fenced with term as Read is,
	// and appends term to the list Accepted returns, in the same atomic
	// operation: nothing is written when the term is refused.
	Write(ctx context.Context, key string, term, value uint64) error

	// Accepted returns the terms of key's accepted writes, in the order
	// the store accepted them.
	Accepted(ctx context.Context, key string) ([]uint64, error)
}

// NewMemory returns a Counter in the test process, which checks terms as a
// fenced store does but fences nothing outside it (the feature cases' one
// under fake time). It is safe for concurrent use.
func NewMemory() Counter { return &memCounter{keys: make(map[string]*memCount)} }

// memCounter is NewMemory's Counter.
type memCounter struct {
	mu   sync.Mutex
	keys map[string]*memCount
}

// memCount is one key of a memCounter.
type memCount struct {
	value, highest uint64
	accepted       []uint64
}

// fenced returns key's count if term is not stale, raising its highest
// term; the caller holds c.mu.
func (c *memCounter) fenced(key string, term uint64) (*memCount, error) {
	if err := (fence.Token{Election: key, Term: term}).Validate(); err != nil {
		return nil, err
	}
	k := c.keys[key]
	if k == nil {
		k = &memCount{}
		c.keys[key] = k
	}
	if term < k.highest {
		return nil, &fence.StaleTermError{Election: key, Term: term, Highest: k.highest}
	}
	k.highest = term
	return k, nil
}

func (c *memCounter) Read(_ context.Context, key string, term uint64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := c.fenced(key, term)
	if err != nil {
		return 0, err
	}
	return k.value, nil
}

func (c *memCounter) Write(_ context.Context, key string, term, value uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := c.fenced(key, term)
	if err != nil {
		return err
	}
	k.value = value
	k.accepted = append(k.accepted, term)
	return nil
}

func (c *memCounter) Accepted(_ context.Context, key string) ([]uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.keys[key]; k != nil {
		return slices.Clone(k.accepted), nil
	}
	return nil, nil
}

// Check checks that c fences as the MutualExclusion case needs, on keys
// of the test's own: a fresh key reads 0; writes with a term are accepted,
// again with the same term too; a read or a write with a lower term is
// refused with an error matching fence.ErrStaleTerm and changes nothing; a
// read raises the fence (a write with the earlier term is then refused);
// Accepted lists the accepted writes' terms in order; keys are
// independent. The case runs it on its counter before using it.
func Check(t *testing.T, c Counter) {
	t.Helper()
	ctx := electiontesting.Context(t)
	key := electiontesting.Election(t)
	read := func(term, want uint64) {
		t.Helper()
		if got, err := c.Read(ctx, key, term); err != nil || got != want {
			t.Fatalf("Read with term %d: %d, %v; want %d", term, got, err, want)
		}
	}
	write := func(term, value uint64) {
		t.Helper()
		if err := c.Write(ctx, key, term, value); err != nil {
			t.Fatalf("Write of %d with term %d: %v", value, term, err)
		}
	}
	stale := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, fence.ErrStaleTerm) {
			t.Fatalf("%s: %v, want an error matching fence.ErrStaleTerm", what, err)
		}
	}
	read(5, 0)
	write(5, 1)
	write(5, 2)
	_, err := c.Read(ctx, key, 4)
	stale("Read with a lower term", err)
	stale("Write with a lower term", c.Write(ctx, key, 4, 9))
	read(7, 2)
	stale("Write with the term a Read raised the fence past", c.Write(ctx, key, 5, 9))
	write(7, 3)
	read(7, 3)
	if got, err := c.Accepted(ctx, key); err != nil || !slices.Equal(got, []uint64{5, 5, 7}) {
		t.Fatalf("Accepted: %v, %v; want [5 5 7]", got, err)
	}
	other := key + "-other"
	if got, err := c.Read(ctx, other, 1); err != nil || got != 0 {
		t.Fatalf("Read of another key with term 1: %d, %v; want 0 (keys are independent)", got, err)
	}
	if got, err := c.Accepted(ctx, other); err != nil || len(got) != 0 {
		t.Fatalf("Accepted of a key never written: %v, %v; want none", got, err)
	}
}
