package etcdlease

import (
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/electiontest"
)

// newProxy starts an electiontest.Proxy to an etcd member's endpoint for t
// (closed when t ends) and returns it with the endpoint clients use.
func newProxy(t testing.TB, member string) (*electiontest.Proxy, string) {
	t.Helper()
	p, err := electiontest.NewProxy(strings.TrimPrefix(member, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, "http://" + p.Addr()
}

// cut cuts p's clients off from etcd as a network partition that resets
// connections would: new connections are refused and current ones reset,
// until p.Heal.
func cut(p *electiontest.Proxy) {
	p.Refuse()
	p.Sever()
}
