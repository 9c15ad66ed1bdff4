package testserver

import (
	"errors"
	"flag"
	"os"
	"testing"
)

// Main is TestMain for a package whose tests share servers it starts
// itself: unless the test binary runs as a fuzz worker (which runs only the
// fuzz target and needs no server), it calls start, which starts the
// servers (see StartPrivate) and returns the func that closes them; then
// it runs the tests and exits as RunMain says. start may be nil.
func Main(m *testing.M, start func() (closeServers func() error)) {
	flag.Parse()
	var closeServers func() error
	if f := flag.Lookup("test.fuzzworker"); start != nil && (f == nil || f.Value.String() != "true") {
		closeServers = start()
	}
	os.Exit(RunMain(m, closeServers))
}

// Private is one server a package's TestMain starts for all the package's
// tests, or the error it failed with. Tests get it with Get.
type Private[S interface{ Close() error }] struct {
	srv     S
	started bool
	err     error
}

// StartPrivate starts a server with start, then runs setup on it (creating
// a bucket or a container, say) if not nil. A failure is kept for Get to
// report in each test; a server whose setup failed is closed.
func StartPrivate[S interface{ Close() error }](start func() (S, error), setup func(S) error) *Private[S] {
	p := &Private[S]{}
	p.srv, p.err = start()
	if p.err != nil {
		return p
	}
	if setup != nil {
		if p.err = setup(p.srv); p.err != nil {
			p.err = errors.Join(p.err, p.srv.Close())
			return p
		}
	}
	p.started = true
	return p
}

// Get returns the server, skipping t (failing it under CI=true) when the
// binary is missing and failing it when the server did not start or was
// never started (p is nil, as in a fuzz worker).
func (p *Private[S]) Get(t testing.TB) S {
	t.Helper()
	if p == nil {
		Require(t, errors.New("testserver: private server not started"))
		var zero S
		return zero
	}
	if !p.started {
		Require(t, p.err)
	}
	return p.srv
}

// Close closes the server if it started. It is safe on a nil Private.
func (p *Private[S]) Close() error {
	if p == nil || !p.started {
		return nil
	}
	return p.srv.Close()
}
