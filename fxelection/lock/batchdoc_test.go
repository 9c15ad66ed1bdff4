package lock_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

// TestDocBatchingBackends: where the docs list the backends that renew in
// batches ("backendkit.BatchRenewer: …"), every one named implements
// backendkit.BatchRenewer and every one that does is named.
func TestDocBatchingBackends(t *testing.T) {
	backends := map[string]fxelection.Backend{
		"Redis":                 (*redislease.Backend)(nil),
		"PostgreSQL":            (*pglease.Backend)(nil),
		"the in-memory backend": (*memory.Backend)(nil),
	}
	list := regexp.MustCompile(`backendkit\.BatchRenewer: ([^)]*)\)`)
	for _, file := range []string{"doc.go", "lock.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", " ")), " ")
		found := list.FindAllStringSubmatch(text, -1)
		if len(found) == 0 {
			t.Errorf("%s: no list of batching backends", file)
		}
		for _, m := range found {
			named := map[string]bool{}
			for _, name := range regexp.MustCompile(`, (and )?`).Split(m[1], -1) {
				named[name] = true
				b, ok := backends[name]
				if !ok {
					t.Errorf("%s names %q among the batching backends: not one this test knows to implement backendkit.BatchRenewer", file, name)
					continue
				}
				if _, ok := b.(backendkit.BatchRenewer); !ok {
					t.Errorf("%s names %q among the batching backends: it does not implement backendkit.BatchRenewer", file, name)
				}
			}
			for name, b := range backends {
				if _, ok := b.(backendkit.BatchRenewer); ok && !named[name] {
					t.Errorf("%s does not name %q among the batching backends", file, name)
				}
			}
		}
	}
}
