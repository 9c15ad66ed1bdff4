package caslease_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// TestNewRejectsInvalidOptions: New refuses Options without Name or Key
// and a WatchBackoff with a negative bound or Max below Min, with an
// error matching ErrOptions that names the field; a zero WatchBackoff and
// a valid one are accepted.
func TestNewRejectsInvalidOptions(t *testing.T) {
	key := func(e string) string { return e }
	for _, tc := range []struct {
		opts  caslease.Options
		field string // "" : valid
	}{
		{caslease.Options{Key: key}, "Name"},
		{caslease.Options{Name: "fake"}, "Key"},
		{caslease.Options{Name: "fake", Key: key, WatchBackoff: caslease.Backoff{Min: -time.Second}}, "WatchBackoff.Min"},
		{caslease.Options{Name: "fake", Key: key, WatchBackoff: caslease.Backoff{Max: -time.Second}}, "WatchBackoff.Max"},
		{caslease.Options{Name: "fake", Key: key, WatchBackoff: caslease.Backoff{Min: 5 * time.Second, Max: time.Second}}, "WatchBackoff.Max"},
		{caslease.Options{Name: "fake", Key: key}, ""},
		{caslease.Options{Name: "fake", Key: key, WatchBackoff: caslease.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}}, ""},
		{caslease.Options{Name: "fake", Key: key, WatchBackoff: caslease.Backoff{Min: 5 * time.Second}}, ""}, // Max: Min
	} {
		b, err := caslease.New(caslease.Bytes(&fakeStore{}), tc.opts)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v", tc.opts.WatchBackoff, err)
		case tc.field == "":
			_ = b.Close()
		case !errors.Is(err, caslease.ErrOptions) || !strings.Contains(err.Error(), tc.field):
			t.Errorf("%+v: %v, want ErrOptions naming %s", tc.opts.WatchBackoff, err, tc.field)
		}
	}
}
