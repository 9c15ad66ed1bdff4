// Package layers checks that the files of a package form layers: a file
// refers only to what its own file or an earlier one in a given order
// declares, so the package reads from the bottom up with no cycles
// between files.
package layers

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Upward returns, for the package in dir (test files excluded), every
// reference from a file to an identifier declared in a later file of
// order, as "from.go:line: name (declared in to.go)". Files of the package
// missing from order, and names of order that are not files of the package,
// are reported as errors.
func Upward(dir string, order []string) ([]string, error) {
	groups := make([][]string, len(order))
	for i, f := range order {
		groups[i] = []string{f}
	}
	return UpwardGroups(dir, groups)
}

// UpwardGroups is Upward for layers of several files each (a concern):
// the files of one layer may refer to each other, and to what earlier
// layers declare, never to a later layer.
func UpwardGroups(dir string, layers [][]string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rank := map[string]int{}
	n := 0
	for i, layer := range layers {
		for _, f := range layer {
			rank[f] = i
			n++
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		base := e.Name()
		if e.IsDir() || !strings.HasSuffix(base, ".go") || strings.HasSuffix(base, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, base), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 && f.Name.Name != files[0].Name.Name {
			return nil, fmt.Errorf("layers: packages %s and %s in %s", files[0].Name.Name, f.Name.Name, dir)
		}
		if _, ok := rank[base]; !ok {
			return nil, fmt.Errorf("layers: %s is not in the order", base)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("layers: no package in %s", dir)
	}
	if len(files) != n {
		return nil, fmt.Errorf("layers: the order names %d files, the package has %d", n, len(files))
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	tpkg, err := conf.Check(files[0].Name.Name, fset, files, info)
	if err != nil {
		return nil, err
	}
	fileOf := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	var out []string
	add := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != tpkg || !obj.Pos().IsValid() {
			return
		}
		from, to := fileOf(at), fileOf(obj.Pos())
		if rank[to] > rank[from] {
			out = append(out, fmt.Sprintf("%s:%d: %s (declared in %s)", from, fset.Position(at).Line, obj.Name(), to))
		}
	}
	for id, obj := range info.Uses {
		add(id.Pos(), obj)
	}
	for sel, s := range info.Selections {
		add(sel.Sel.Pos(), s.Obj())
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
