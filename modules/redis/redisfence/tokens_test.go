package redisfence_test

import (
	"context"
	"testing"

	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

// TestTokenPrecedence: the guard fences a lock's or a leadership's writes
// with that holding's own term, even when the holding began in a context
// carrying another token (fence.WithToken): a former holder's late write
// is refused once its successor wrote.
func TestTokenPrecedence(t *testing.T) {
	c := newClient(t, newServer(t).Addr())
	g := redisfence.New(c, redisfence.Options{})
	electiontesting.RunTokenPrecedence(t, func(ctx context.Context) error {
		tok, err := fence.FromContext(ctx)
		if err != nil {
			return err
		}
		return g.Set(ctx, "data:"+redisfence.HashTag(tok.Election), tok.Term, 0)
	})
}
