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
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// runStatus prints the election's current leader from the store. The
// backend comes from the flags' configuration document, through the module
// life cycle: Provision, Backend, and Cleanup on return.
func runStatus(ctx context.Context, o options, w io.Writer) (err error) {
	b, cleanup, err := provisionBackend(ctx, o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup()) }()
	if o.watch {
		return runWatch(ctx, o, b, w)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := b.Get(ctx, o.election)
	if errors.Is(err, backendkit.ErrNoLease) {
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

// provisionBackend builds the backend module of the flags' document and
// provisions it as an fx app built from the document would: Provision (if
// the module has it), then Backend. cleanup runs the module's Cleanup (if
// any); it is also run at once when Provision or Backend fails. A module
// that loads nested modules (modkit.Context.ProvisionBackend) cannot be
// provisioned here: the flags never describe one.
func provisionBackend(ctx context.Context, o options) (b fxelection.Backend, cleanup func() error, err error) {
	doc, err := o.document()
	if err != nil {
		return nil, nil, err
	}
	m := doc.Elections[0].Backend.Module
	cleanup = func() error {
		if c, ok := m.(modkit.CleanerUpper); ok {
			if err := c.Cleanup(); err != nil {
				return fmt.Errorf("cleanup: %w", err)
			}
		}
		return nil
	}
	if p, ok := m.(modkit.Provisioner); ok {
		if err := p.Provision(modkit.Context{Context: ctx}); err != nil {
			err = errors.Join(fmt.Errorf("provision: %w", err), cleanup())
			return nil, nil, o.settingError(err.Error()[len("provision: "):], err)
		}
	}
	b, err = m.Backend()
	if err == nil && b == nil {
		err = errors.New("nil Backend")
	}
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("backend: %w", err), cleanup())
	}
	return b, cleanup, nil
}
