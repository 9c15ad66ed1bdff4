package redisfence

import (
	"errors"
	"testing"

	"github.com/fxelection/fxelection/fxelection/fence"
)

// FuzzMapErr: whatever error text a server (or something posing as one)
// sends back, mapping it never panics, a stale error never reports a
// highest term beyond MaxTerm, and nothing else is mistaken for a stale
// term.
func FuzzMapErr(f *testing.F) {
	for _, s := range []string{
		"FXFENCESTALE 12", "FXFENCESTALE 9223372036854775808", "FXFENCESTALE -1", "FXFENCESTALE ",
		"FXFENCEINVALID the fence key holds a value that is not a term", "ERR wrong", "CROSSSLOT Keys", "",
		"FXFENCESTALE 1\x1b[31m", "NOSCRIPT No matching script",
	} {
		f.Add(s)
	}
	g := New(nil, Options{})
	tok := fence.Token{Election: "e", Term: 5}
	f.Fuzz(func(t *testing.T, msg string) {
		err := g.mapErr(tok, errors.New(msg))
		if err == nil {
			t.Fatal("nil error")
		}
		var ste *fence.StaleTermError
		if errors.As(err, &ste) {
			if ste.Highest > backendkit.MaxTerm || ste.Term != 5 || ste.Election != "e" {
				t.Fatalf("%q → %+v", msg, ste)
			}
			if len(msg) < len("FXFENCESTALE ") || msg[:len("FXFENCESTALE ")] != "FXFENCESTALE " {
				t.Fatalf("%q mistaken for a stale term", msg)
			}
		}
	})
}
