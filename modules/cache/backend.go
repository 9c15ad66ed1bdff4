package cachelease

import (
	"errors"

	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// New returns a Backend on store, which the caller owns: the caslease
// algorithm on the store's bytes (caslease.Bytes), with keys
// caslease.EscapedKey under Options.KeyPrefix within the store's
// MaxKeyLen. It does no I/O.
func New(store Store, opts Options) (*Backend, error) {
	if store == nil {
		return nil, errors.New("cachelease: nil store")
	}
	caps := store.Capabilities()
	if err := opts.Validate(caps); err != nil {
		return nil, err
	}
	name, prefix := opts.Name, opts.keyPrefix()
	if name == "" {
		name = "cache"
	}
	return caslease.NewNotifying(caslease.Bytes(store), caslease.Options{
		Name:        name,
		Key:         func(election string) string { return caslease.EscapedKey(prefix, election, caps.MaxKeyLen) },
		Prefix:      prefix,
		ElectionOf:  func(key string) (string, bool) { return caslease.EscapedElection(prefix, key) },
		Secrets:     opts.Secrets,
		DisablePush: opts.DisablePush,
	})
}
