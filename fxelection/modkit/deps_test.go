package modkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLight: the module kit, and a backend package that registers its
// module with it, link none of the document machinery: no YAML, no
// os/exec (health commands), no lock, pool or config package.
func TestLight(t *testing.T) {
	// go test puts its own toolchain's bin first on PATH.
	out, err := exec.Command("go", "list", "-deps", ".", "../../modules/redis", "../../modules/postgres").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(dep, "yaml"), dep == "os/exec",
			strings.HasPrefix(dep, "github.com/fxelection/fxelection/fxelection/") &&
				(strings.HasSuffix(dep, "/lock") || strings.HasSuffix(dep, "/pool") || strings.HasSuffix(dep, "/config")):
			t.Errorf("modkit or a backend package depends on %s", dep)
		}
	}
}
