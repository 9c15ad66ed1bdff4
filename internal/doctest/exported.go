package doctest

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// NoUnexportedInDocs fails t for every doc comment of dir's package that
// go doc shows (the package's own, and those of exported constants,
// variables, functions, types, methods, struct fields and interface
// methods) and that names an unexported identifier the package declares
// at top level or as a method, matched as a whole word. Implementation
// notes belong in plain comments inside the code, not in the docs a user
// reads. Test files are not read.
func NoUnexportedInDocs(t testing.TB, dir string) {
	t.Helper()
	problems, err := unexportedInDocs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", dir, p)
	}
}

// unexportedInDocs returns one line for each doc comment of dir's package
// that names unexported identifiers.
func unexportedInDocs(dir string) ([]string, error) {
	fset := token.NewFileSet()
	files, err := parseDir(fset, dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	hidden := unexportedNames(files) // before doc.NewFromFiles trims the files
	p, err := doc.NewFromFiles(fset, files, "doctest")
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, c := range docComments(p) {
		if bad := namesIn(c.text, hidden); len(bad) > 0 {
			problems = append(problems, fmt.Sprintf("the doc of %s names unexported %s", c.of, strings.Join(bad, ", ")))
		}
	}
	return problems, nil
}

// parseDir parses the non-test Go files of dir, with comments.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// unexportedNames are the unexported identifiers files declare at top
// level (constants, variables, functions, types) and as methods.
func unexportedNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	add := func(id *ast.Ident) {
		// init and _ are declared but cannot be referred to.
		if id != nil && id.Name != "_" && id.Name != "init" && !id.IsExported() {
			names[id.Name] = true
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				add(d.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n)
						}
					}
				}
			}
		}
	}
	return names
}

// comment is one doc comment and what it documents.
type comment struct{ of, text string }

// docComments are the doc comments go doc shows for p (filtered to its
// exported API by doc.NewFromFiles).
func docComments(p *doc.Package) []comment {
	cs := []comment{{"package " + p.Name, p.Doc}}
	values := func(owner string, vs []*doc.Value) {
		for _, v := range vs {
			cs = append(cs, comment{owner + strings.Join(v.Names, ", "), v.Doc})
			cs = append(cs, specComments(v.Decl)...)
		}
	}
	funcs := func(owner string, fs []*doc.Func) {
		for _, f := range fs {
			cs = append(cs, comment{owner + f.Name, f.Doc})
		}
	}
	values("", p.Consts)
	values("", p.Vars)
	funcs("", p.Funcs)
	for _, ty := range p.Types {
		cs = append(cs, comment{ty.Name, ty.Doc})
		cs = append(cs, specComments(ty.Decl)...)
		values("", ty.Consts)
		values("", ty.Vars)
		funcs("", ty.Funcs)
		funcs(ty.Name+".", ty.Methods)
	}
	return cs
}

// specComments are the comments of the specs of a const, var or type
// declaration that go doc prints with it: per-spec docs and line comments,
// and those of a struct's exported fields and an interface's methods.
func specComments(d *ast.GenDecl) []comment {
	var cs []comment
	group := func(of string, gs ...*ast.CommentGroup) {
		for _, g := range gs {
			if g != nil {
				cs = append(cs, comment{of, g.Text()})
			}
		}
	}
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.ValueSpec:
			if len(s.Names) > 0 && s.Names[0].IsExported() {
				group(s.Names[0].Name, s.Doc, s.Comment)
			}
		case *ast.TypeSpec:
			var fields *ast.FieldList
			switch ty := s.Type.(type) {
			case *ast.StructType:
				fields = ty.Fields
			case *ast.InterfaceType:
				fields = ty.Methods
			}
			if fields == nil {
				continue
			}
			for _, f := range fields.List {
				name := fieldName(f)
				if name == "" || !ast.IsExported(name) {
					continue
				}
				group(s.Name.Name+"."+name, f.Doc, f.Comment)
			}
		}
	}
	return cs
}

// fieldName is a field's (first) name, or an embedded field's type name.
func fieldName(f *ast.Field) string {
	if len(f.Names) > 0 {
		return f.Names[0].Name
	}
	x := f.Type
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.SelectorExpr:
			return e.Sel.Name
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// namesIn returns the names of names that text uses as identifiers, sorted,
// each once. A word (a run of letters, digits and '_') counts when it is one
// of names and reads as code, not prose: it has an upper-case letter, a
// digit or '_' in it (mixedCaps, as leadStep), or it is in backquotes or
// [brackets], or a selector (x.name), or called (name(). A name that is a
// plain lower-case word (renew, release) is also an English word, and in
// prose it is one. Names a code example in text declares with := are its
// own, not the package's.
func namesIn(text string, names map[string]bool) []string {
	locals := declared(text)
	found := map[string]bool{}
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	rs := []rune(text)
	for i := 0; i < len(rs); {
		if !isWord(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && isWord(rs[j]) {
			j++
		}
		w := string(rs[i:j])
		if names[w] && !locals[w] && readsAsCode(w, rs, i, j) {
			found[w] = true
		}
		i = j
	}
	bad := make([]string, 0, len(found))
	for w := range found {
		bad = append(bad, w)
	}
	sort.Strings(bad)
	return bad
}

// readsAsCode reports whether word w, at rs[i:j], reads as an identifier.
func readsAsCode(w string, rs []rune, i, j int) bool {
	for k, r := range w {
		if k > 0 && unicode.IsUpper(r) || unicode.IsDigit(r) || r == '_' {
			return true
		}
	}
	before, after := rune(0), rune(0)
	if i > 0 {
		before = rs[i-1]
	}
	if j < len(rs) {
		after = rs[j]
	}
	switch {
	case before == '`' && after == '`', before == '[' && after == ']':
		return true
	case before == '.', after == '(':
		return true
	}
	return false
}

// declared returns the names text declares with := (as in "a, err := f()").
func declared(text string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		lhs, _, ok := strings.Cut(line, ":=")
		if !ok {
			continue
		}
		for _, n := range strings.Split(lhs, ",") {
			if f := strings.Fields(n); len(f) > 0 {
				names[f[len(f)-1]] = true
			}
		}
	}
	return names
}
