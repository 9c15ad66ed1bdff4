package pgfence_test

import (
	"context"
	"testing"

	"github.com/fxelection/fxelection/internal/electiontesting"
)

// TestTokenPrecedence: the guard fences a lock's or a leadership's writes
// with that holding's own term, even when the holding began in a context
// carrying another token (fence.WithToken): a former holder's late write
// is refused once its successor wrote.
func TestTokenPrecedence(t *testing.T) {
	d := newData(t, newPool(t, 4))
	electiontesting.RunTokenPrecedence(t, func(ctx context.Context) error {
		_, err := d.write(ctx, "w")
		return err
	})
}
