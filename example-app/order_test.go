package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigListsElectionsInDocumentOrder (bug: with --config, /leader and
// the health reports listed the elections in fx's group order, which is
// random): five elections, named in no sorted order and two of them with
// one name, come back in the document's order on /leader, /healthz and
// /readyz, on each of ten starts.
func TestConfigListsElectionsInDocumentOrder(t *testing.T) {
	const timing = `"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms"`
	elections := []string{"reports", "billing", "mail", "billing", "audit"}
	var want, entries []string
	for i, n := range elections {
		id := fmt.Sprintf("node-%d", i)
		want = append(want, n+"/"+id)
		backend := `"shared"`
		if i == 3 { // the second "billing": its own store, its own fx name
			backend = `{"module": "fxelection.backends.memory"}`
		}
		entries = append(entries, fmt.Sprintf(`{"name": %q, "fx_name": "e%d", "identity": %q, "backend": %s, %s}`, n, i, id, backend, timing))
	}
	file := writeFile(t, "elections.json", `{
  "backends": {"shared": {"module": "fxelection.backends.memory"}},
  "elections": [`+strings.Join(entries, ",\n")+`]
}`)
	for start := range 10 {
		addr := freeAddr(t)
		o, err := parseArgs([]string{"--config", file, "--http", addr, "--admin", "off", "--work-interval", "100ms"}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runConfig(ctx, o, slog.New(slog.DiscardHandler)) }()

		var list []leaderJSON
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := get(t, "http://"+addr+"/leader")
			if code == 200 {
				if err := json.Unmarshal([]byte(body), &list); err != nil {
					cancel()
					t.Fatalf("start %d: /leader: %v: %q", start, err, body)
				}
				break
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("start %d: /leader never answered: %d %s", start, code, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		var got []string
		for _, l := range list {
			got = append(got, l.Election+"/"+l.Identity)
		}
		if !slices.Equal(got, want) {
			cancel()
			t.Fatalf("start %d: /leader lists %v, want the document's order %v", start, got, want)
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			_, body := get(t, "http://"+addr+path)
			var rep struct {
				Electors []struct{ Election, Identity string }
			}
			if err := json.Unmarshal([]byte(body), &rep); err != nil {
				cancel()
				t.Fatalf("start %d: %s: %v: %q", start, path, err, body)
			}
			got = got[:0]
			for _, c := range rep.Electors {
				got = append(got, c.Election+"/"+c.Identity)
			}
			if !slices.Equal(got, want) {
				cancel()
				t.Fatalf("start %d: %s lists %v, want the document's order %v", start, path, got, want)
			}
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("start %d: stop: %v", start, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("start %d: no stop within 30s", start)
		}
	}
}
