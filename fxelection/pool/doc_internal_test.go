package pool

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// TestDocScanAhead: the Pool and Config.MaxWorkers docs state how many
// slots past the highest live one a scan reads, and it is scanAhead.
func TestDocScanAhead(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "pool.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			for _, spec := range n.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					docs[ts.Name.Name] = n.Doc.Text()
				}
			}
		case *ast.Field:
			if len(n.Names) > 0 && n.Names[0].Name == "MaxWorkers" {
				docs["Config.MaxWorkers"] = n.Doc.Text()
			}
		}
		return true
	})
	said := regexp.MustCompile(`up to (\S+) past the highest live one`)
	want := fmt.Sprint(scanAhead)
	for _, name := range []string{"Pool", "Config.MaxWorkers"} {
		doc := strings.Join(strings.Fields(docs[name]), " ")
		m := said.FindAllStringSubmatch(doc, -1)
		if len(m) != 1 || m[0][1] != want {
			t.Errorf("the %s doc states %v slots past the highest live one, want exactly one statement of %s (scanAhead)", name, m, want)
		}
	}
}
