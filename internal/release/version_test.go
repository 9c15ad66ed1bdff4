package main

import (
	"errors"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.4.0", "v1.0.0", "v10.20.30", "v0.4.0-rc.1", "v0.0.0-releasetest", "v1.0.0-alpha-beta.0.x-1", "v2.0.0-RC1"} {
		if err := checkVersion(v); err != nil {
			t.Errorf("checkVersion(%q) = %v, want nil", v, err)
		}
	}
	for _, v := range []string{"", "0.4.0", "v0.4", "v0.4.0.1", "v01.2.3", "v1.02.3", "v1.2.03", "v1.2.x",
		"v1.2.3-", "v1.2.3-rc..1", "v1.2.3-rc.01", "v1.2.3-rc_1", "v1.2.3+build", "v1.2.3-rc+build", "V1.2.3"} {
		if err := checkVersion(v); !errors.Is(err, errInvalidVersion) {
			t.Errorf("checkVersion(%q) = %v, want errInvalidVersion", v, err)
		}
	}
}

func TestCheckMajor(t *testing.T) {
	for _, c := range []struct {
		path, version string
		ok            bool
	}{
		{"github.com/fxelection/fxelection", "v0.4.0", true},
		{"github.com/fxelection/fxelection", "v1.2.3", true},
		{"github.com/fxelection/fxelection", "v2.0.0", false},
		{"github.com/fxelection/fxelection/modules/etcd", "v9.9.9-test", false},
		{"github.com/fxelection/fxelection/v2", "v2.0.0", true},
		{"github.com/fxelection/fxelection/v2", "v1.0.0", false},
		{"github.com/fxelection/fxelection/v2", "v3.0.0", false},
		{"example.com/v1", "v1.0.0", true}, // /v1 is not a major suffix
	} {
		err := checkMajor(c.path, c.version)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, errInvalidVersion)) {
			t.Errorf("checkMajor(%q, %q) = %v, want ok %v", c.path, c.version, err, c.ok)
		}
	}
}

func TestIsPseudo(t *testing.T) {
	for v, want := range map[string]bool{
		"v0.0.0-20191109021931-daa7c04131f5":       true,
		"v1.2.4-0.20191109021931-daa7c04131f5":     true,
		"v1.2.3-pre.0.20191109021931-daa7c04131f5": true,
		"v0.0.0-releasetest":                       false,
		"v1.2.3-rc.1":                              false,
		"v1.2.3":                                   false,
	} {
		if got := isPseudo(v); got != want {
			t.Errorf("isPseudo(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestEscapePath(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/fxelection/fxelection":  "github.com/fxelection/fxelection",
		"github.com/Azure/azure-sdk-for-go": "github.com/!azure/azure-sdk-for-go",
		"github.com/BurntSushi/toml":        "github.com/!burnt!sushi/toml",
		"v2.0.0-RC1":                        "v2.0.0-!r!c1",
	} {
		got, err := escapePath(in)
		if err != nil || got != want {
			t.Errorf("escapePath(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "example.com/a!b"} {
		if _, err := escapePath(in); !errors.Is(err, errEscape) {
			t.Errorf("escapePath(%q) = %v, want errEscape", in, err)
		}
	}
}
