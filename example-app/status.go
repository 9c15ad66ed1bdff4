package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// runStatus prints the election's current leader from the store.
func runStatus(ctx context.Context, o options, w io.Writer) error {
	b, err := fxelection.NewBackend(ctx, o.backend, o.settings())
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
		fmt.Fprintf(w, "election %q has no leader\n", o.election)
		return nil
	}
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	fmt.Fprintf(w, "election: %s\nleader:   %s\nterm:     %d\n", o.election, l.Holder, l.Term)
	if !l.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires:  %s (in %v, by the store's clock)\n", l.ExpiresAt.Format(time.RFC3339Nano), time.Until(l.ExpiresAt).Round(time.Millisecond))
	}
	keys := make([]string, 0, len(l.Metadata))
	for k := range l.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "metadata: %s=%s\n", k, l.Metadata[k])
	}
	return nil
}
