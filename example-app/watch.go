package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// runWatch follows the election's leader with an watch.Watcher and
// prints one line per change until ctx is done (Ctrl-C).
func runWatch(ctx context.Context, o options, b fxelection.Backend, w io.Writer) error {
	watcher, err := watch.New(watch.Config{
		Name:         o.election,
		PollInterval: o.retry,
		OnChange:     func(info watch.LeaderInfo) { fmt.Fprintln(w, formatLeader(o.election, info)) },
	}, b)
	if err != nil {
		return usagef("%v", err)
	}
	if err := watcher.Start(ctx); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return watcher.Stop(stopCtx)
}

// formatLeader is one line of status --watch output.
func formatLeader(election string, info watch.LeaderInfo) string {
	at := info.ObservedAt.Format("15:04:05.000")
	if !info.HasLeader {
		return fmt.Sprintf("%s election %q has no leader", at, election)
	}
	l := info.Leader
	keys := make([]string, 0, len(l.Metadata))
	for k := range l.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var meta strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&meta, " %s=%s", k, l.Metadata[k])
	}
	return fmt.Sprintf("%s election %q leader %s term %d%s", at, election, l.Holder, l.Term, meta.String())
}
