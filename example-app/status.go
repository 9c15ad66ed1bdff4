package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// runStatus prints the election's current leader from the store.
func runStatus(ctx context.Context, o options, w io.Writer) error {
	b, err := newBackend(ctx, o)
	if err != nil {
		return err
	}
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	if o.watch {
		return runWatch(ctx, o, b, w)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := b.Get(ctx, o.election)
	if errors.Is(err, fxelection.ErrNoLease) {
		fmt.Fprintf(w, "election %s has no leader\n", strconv.Quote(o.election))
		return nil
	}
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	printLease(w, o.election, l, time.Now())
	return nil
}

// printLease writes l for a terminal. Everything the store controls
// (holder, metadata keys and values) and the election name pass through
// escape, so escape sequences and forged lines cannot reach the terminal,
// whatever a backend let through.
func printLease(w io.Writer, election string, l fxelection.Lease, now time.Time) {
	fmt.Fprintf(w, "election: %s\nleader:   %s\nterm:     %d\n", escape(election), escape(l.Holder), l.Term)
	if !l.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires:  %s (in %v, by the store's clock)\n", l.ExpiresAt.Format(time.RFC3339Nano), l.ExpiresAt.Sub(now).Round(time.Millisecond))
	}
	keys := make([]string, 0, len(l.Metadata))
	for k := range l.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := escape(k)
		if key == k && strings.Contains(k, "=") { // "a=b"="c" must not read as a=b=c
			key = strconv.Quote(k)
		}
		fmt.Fprintf(w, "metadata: %s=%s\n", key, escape(l.Metadata[k]))
	}
}
