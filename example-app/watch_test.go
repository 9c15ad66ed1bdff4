package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

func TestStatusWatch(t *testing.T) {
	mem := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	out := &electiontesting.LogBuffer{}
	done := make(chan error, 1)
	go func() { done <- runWatch(ctx, options{election: "w", retry: 50 * time.Millisecond}, mem, out) }()

	e, err := fxelection.New(fxelection.Config{Name: "w", Identity: "web-1", Metadata: map[string]string{"addr": "10.0.0.1:80"},
		Timing: fxelection.Timing{LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFloor)
	for !strings.Contains(out.String(), "leader web-1 term") {
		if time.Now().After(deadline) {
			t.Fatalf("no leader line:\n%s", out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		_, after, _ := strings.Cut(out.String(), "leader web-1 term")
		if strings.Contains(after, "has no leader") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("release not shown:\n%s", out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "addr=10.0.0.1:80") {
		t.Fatalf("metadata missing:\n%s", out)
	}
}

func TestWatchNeedsStatus(t *testing.T) {
	if _, err := parseArgs([]string{"--watch"}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "--watch") {
		t.Fatalf("--watch without status: %v", err)
	}
	o, err := parseArgs([]string{"status", "--watch", "--backend", "memory"}, func(string) string { return "" })
	if err != nil || !o.watch {
		t.Fatalf("status --watch: %+v %v", o, err)
	}
}
