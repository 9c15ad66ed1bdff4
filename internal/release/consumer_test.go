package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/internal/testtier"
)

// consumerVersion is the version the consumer test publishes: a
// pre-release of v0.0.0 that no real release will ever be.
const consumerVersion = "v0.0.0-releasetest"

const consumerMain = `package main

import (
	"fmt"

	"github.com/fxelection/fxelection/fxelection"
	etcdlease "github.com/fxelection/fxelection/modules/etcd"
)

// The etcd module's Backend is the root module's fxelection.Backend: both
// modules resolved to one fxelection package.
var _ fxelection.Backend = (*etcdlease.Backend)(nil)

func main() {
	_, err := etcdlease.New(nil, etcdlease.Options{})
	fmt.Println(err)
}
`

// goCommand returns the go command of the toolchain running the test: go
// test puts its own toolchain's bin first on PATH.
func goCommand(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}

// TestConsumerBuilds publishes this repository's modules, as they would be
// released, to a file module proxy, and builds a consumer module outside
// the repository (no replace, no workspace) that imports both the root
// module's fxelection package and modules/etcd: one go get of both at the
// version, one go build.
//
// The consumer gets a module cache of its own: the go command never fetches
// a module@version it has cached again, so in the shared cache the fake
// version would keep the first run's files forever (and be shared by runs
// in other work trees). Third-party modules come from the shared cache's
// download directory (a file proxy itself), then from the usual GOPROXY;
// -trimpath keys the build cache by module@version instead of directory, so
// the compiled dependencies are reused from run to run.
func TestConsumerBuilds(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	goCmd := goCommand(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}

	proxy := t.TempDir()
	if err := run([]string{"-C", root, "-version", consumerVersion, "-proxy", proxy}, io.Discard); err != nil {
		t.Fatal(err)
	}

	envOut, err := exec.Command(goCmd, "env", "-json", "GOPROXY", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goenv struct{ GOPROXY, GOMODCACHE string }
	if err := json.Unmarshal(envOut, &goenv); err != nil {
		t.Fatalf("go env: %v", err)
	}
	proxies := []string{fileURL(proxy)}
	if goenv.GOMODCACHE != "" {
		proxies = append(proxies, fileURL(filepath.Join(goenv.GOMODCACHE, "cache", "download")))
	}
	if goenv.GOPROXY != "" {
		proxies = append(proxies, goenv.GOPROXY)
	}
	set := map[string]string{
		"GOPROXY":     strings.Join(proxies, ","),
		"GOMODCACHE":  t.TempDir(),
		"GOFLAGS":     "-modcacherw", // so that t.TempDir can remove the cache
		"GONOSUMDB":   "github.com/fxelection/fxelection",
		"GONOPROXY":   "",
		"GOPRIVATE":   "",
		"GOWORK":      "off",
		"GOTOOLCHAIN": "local",
		"GO111MODULE": "on",
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !hasKey(set, k) {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}

	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion, err := directive(rootMod, "go")
	if err != nil || goVersion == "" {
		t.Fatalf("root go.mod has no go directive (%v)", err)
	}
	consumer := t.TempDir()
	writeTree(t, consumer, map[string]string{
		"go.mod":  "module example.invalid/consumer\n\ngo " + goVersion + "\n",
		"main.go": consumerMain,
	})
	gorun := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goCmd, args...)
		cmd.Dir = consumer
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Only modules/etcd is named: the root must come in at the version
	// through the etcd module's own requirement. (Naming both would pass
	// even if that requirement were still the zero pseudo-version, as
	// v0.0.0-releasetest sorts above it and wins.)
	gorun("get", "github.com/fxelection/fxelection/modules/etcd@"+consumerVersion)
	gorun("build", "-trimpath", "-o", os.DevNull, "./...")

	gomod, err := os.ReadFile(filepath.Join(consumer, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/fxelection/fxelection " + consumerVersion, "github.com/fxelection/fxelection/modules/etcd " + consumerVersion} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("consumer go.mod does not require %s:\n%s", want, gomod)
		}
	}
	if strings.Contains(string(gomod), "replace") {
		t.Errorf("consumer go.mod has a replace:\n%s", gomod)
	}
}

// hasKey reports whether m has the key k.
func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
