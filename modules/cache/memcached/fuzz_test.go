package memcachedlease

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection/config"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// FuzzModuleSettings feeds arbitrary addr, timeout and prefix values to
// the module through a document: decoding and Validate never panic, a
// refused value is never echoed, and a prefix the module accepts is one
// New accepts (they share cachelease.Options.Validate), and the reverse.
func FuzzModuleSettings(f *testing.F) {
	f.Add("h:1", "1s", "fxelection.")
	f.Add("h:1, h:2", "250ms", "")
	f.Add(" , ", "-1s", "a b")
	f.Add("memcached://u:p@h:1", "soon", ".x")
	f.Add("[::1]:11211", "0s", "a..b")
	f.Add("h", "1h", strings.Repeat("p", 200))
	client := memcache.New("127.0.0.1:1") // never dialled
	f.Fuzz(func(t *testing.T, addr, timeout, prefix string) {
		settings, err := json.Marshal(map[string]string{"module": moduleID, "addr": addr, "timeout": timeout, "prefix": prefix})
		if err != nil {
			return
		}
		doc := `{"elections": [{"name": "e", "backend": ` + string(settings) + `}]}`
		_, docErr := config.Parse([]byte(doc))
		if errors.Is(docErr, config.ErrInvalidValue) || errors.Is(docErr, config.ErrRequired) {
			return // timeout refused or addr missing while decoding: Validate did not run
		}
		_, newErr := New(client, cachelease.Options{KeyPrefix: prefix})
		if docErr == nil && newErr != nil {
			t.Fatalf("module accepts prefix %q, New refuses it: %v", prefix, newErr)
		}
		if newErr != nil && !errors.Is(docErr, cachelease.ErrInvalidPrefix) {
			t.Fatalf("New refuses prefix %q (%v), the module says %v", prefix, newErr, docErr)
		}
		// Long values only: a short one may be a word of the message.
		if docErr != nil && len(addr) > 24 && strings.Contains(docErr.Error(), addr) {
			t.Fatalf("error %q echoes addr %q", docErr, addr)
		}
	})
}
