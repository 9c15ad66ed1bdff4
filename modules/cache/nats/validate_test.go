package natslease_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
	natslease "github.com/fxelection/fxelection/modules/cache/nats"
)

// TestMalformedURLRefusedByLoad: a URL the client could not parse is
// refused when the document is loaded (Validate), not at Provision, with
// an error naming the setting and quoting no part of the URL.
func TestMalformedURLRefusedByLoad(t *testing.T) {
	const pw = "Sup3r-Secret_pw"
	for name, u := range map[string]string{
		"BadEscape":  "nats://u:" + pw + "@127.0.0.1:4222/%zz",
		"BadPort":    "nats://u:" + pw + "@127.0.0.1:port",
		"NoHost":     "nats://",
		"SecondOnly": "nats://127.0.0.1:4222,nats://u:" + pw + "@[::1",
	} {
		t.Run(name, func(t *testing.T) {
			q, _ := json.Marshal(u)
			_, err := config.Load([]byte(`{"elections": [{"name": "e", "backend":
				{"module": "fxelection.backends.nats", "url": ` + string(q) + `}}]}`))
			if !errors.Is(err, natslease.ErrInvalidSettings) || !strings.Contains(err.Error(), "url: ") {
				t.Fatalf("error %v: want ErrInvalidSettings naming url", err)
			}
			for _, part := range []string{pw, "127.0.0.1", "port", "zz", "::1"} {
				if strings.Contains(err.Error(), part) {
					t.Fatalf("error %q quotes the URL (%q)", err, part)
				}
			}
		})
	}
}
