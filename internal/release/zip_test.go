package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeTree creates the files (slash path → contents) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readZip returns the files of the zip at p: name → contents.
func readZip(t *testing.T, p string) map[string]string {
	t.Helper()
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := files[f.Name]; dup {
			t.Errorf("%s: %s twice", p, f.Name)
		}
		files[f.Name] = string(data)
	}
	return files
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fixtureRepo is a module tree outside git with one nested module and
// everything a module zip leaves out.
var fixtureRepo = map[string]string{
	"go.mod":                        "module example.com/root\n\ngo 1.26\n",
	"a.go":                          "package root\n",
	"LICENSE":                       "the license\n",
	".gitignore":                    "/bin\n",
	".git/config":                   "[core]\n",
	".cache/tool/x":                 "cached\n",
	"sub/.cache/kept.txt":           "not the top .cache\n",
	"sub/.hg/store":                 "vcs\n",
	"vendor/modules.txt":            "# vendored\n",
	"vendor/example.com/p/p.go":     "package p\n",
	"modules/etcd/go.mod":           "module example.com/root/modules/etcd\n\ngo 1.26\n\nreplace example.com/root => ../..\n\nrequire example.com/root v0.0.0-00010101000000-000000000000\n",
	"modules/etcd/e.go":             "package etcd\n",
	"modules/etcd/sub/s.go":         "package sub\n",
	"internal/testdata/mod/go.mod":  "module example.com/testdata\n",
	"internal/testdata/mod/x.go":    "package x\n",
	"internal/testdata/data.txt":    "kept\n",
	"dir with space/ünïcode~x.txt":  "kept\n",
	"modules/other-not-a-module.md": "kept\n",
}

// TestProxyFixture: the proxy of a tree outside git holds, for each
// module, a zip of exactly the files the go command would zip, under
// module@version/, a .mod equal to the zip's go.mod, an .info and a list.
func TestProxyFixture(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, fixtureRepo)
	if err := os.Symlink("a.go", filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	mods, err := findModules(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 2 || mods[0].Path != "example.com/root" || mods[1].Dir != "modules/etcd" {
		t.Fatalf("findModules = %+v", mods)
	}
	proxy := t.TempDir()
	const v = "v1.2.0-rc.1"
	when := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := writeProxy(proxy, root, mods, v, when); err != nil {
		t.Fatal(err)
	}
	if err := writeProxy(proxy, root, mods, "v1.2.0", when); err != nil { // a second version joins the list
		t.Fatal(err)
	}

	rootZip := readZip(t, filepath.Join(proxy, "example.com/root/@v", v+".zip"))
	want := []string{".gitignore", "LICENSE", "a.go", "dir with space/ünïcode~x.txt", "go.mod",
		"internal/testdata/data.txt", "modules/other-not-a-module.md", "sub/.cache/kept.txt", "vendor/modules.txt"}
	for i := range want {
		want[i] = "example.com/root@" + v + "/" + want[i]
	}
	if got := sortedKeys(rootZip); !slices.Equal(got, want) {
		t.Errorf("root zip:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	const etcdPath = "example.com/root/modules/etcd"
	etcdZip := readZip(t, filepath.Join(proxy, etcdPath, "@v", v+".zip"))
	want = []string{"LICENSE", "e.go", "go.mod", "sub/s.go"}
	for i := range want {
		want[i] = etcdPath + "@" + v + "/" + want[i]
	}
	if got := sortedKeys(etcdZip); !slices.Equal(got, want) {
		t.Errorf("nested zip: %q, want %q", got, want)
	}
	if got := etcdZip[etcdPath+"@"+v+"/LICENSE"]; got != "the license\n" {
		t.Errorf("nested zip's LICENSE = %q, want the root's", got)
	}
	mod, err := os.ReadFile(filepath.Join(proxy, etcdPath, "@v", v+".mod"))
	if err != nil {
		t.Fatal(err)
	}
	if string(mod) != etcdZip[etcdPath+"@"+v+"/go.mod"] {
		t.Errorf(".mod differs from the zip's go.mod:\n%s", mod)
	}
	if !strings.Contains(string(mod), "require example.com/root "+v+"\n") ||
		!strings.Contains(string(mod), "replace example.com/root => ../..\n") {
		t.Errorf("nested .mod does not require the root at %s (keeping the replace):\n%s", v, mod)
	}

	var info struct {
		Version string
		Time    time.Time
	}
	data, err := os.ReadFile(filepath.Join(proxy, "example.com/root/@v", v+".info"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &info); err != nil || info.Version != v || !info.Time.Equal(when) {
		t.Errorf(".info = %s (%v)", data, err)
	}
	for _, p := range []string{"example.com/root", etcdPath} {
		list, err := os.ReadFile(filepath.Join(proxy, p, "@v/list"))
		if err != nil || string(list) != v+"\nv1.2.0\n" {
			t.Errorf("%s list = %q, %v", p, list, err)
		}
	}
	// The working tree is untouched.
	if got, _ := os.ReadFile(filepath.Join(root, "modules/etcd/go.mod")); string(got) != fixtureRepo["modules/etcd/go.mod"] {
		t.Errorf("writeProxy changed modules/etcd/go.mod:\n%s", got)
	}
}

// TestProxyCaseEncoding: upper-case letters in module paths and versions
// are case-encoded in the proxy's file names, not in the zip's.
func TestProxyCaseEncoding(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"go.mod": "module example.com/Upper/Mod\n", "m.go": "package mod\n"})
	mods, err := findModules(root)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := writeProxy(proxy, root, mods, "v1.0.0-RC1", time.Now()); err != nil {
		t.Fatal(err)
	}
	files := readZip(t, filepath.Join(proxy, "example.com/!upper/!mod/@v/v1.0.0-!r!c1.zip"))
	if got := sortedKeys(files); !slices.Equal(got, []string{"example.com/Upper/Mod@v1.0.0-RC1/go.mod", "example.com/Upper/Mod@v1.0.0-RC1/m.go"}) {
		t.Errorf("zip names %q", got)
	}
}

func TestFindModulesRefusesMisplacedModule(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go.mod":             "module example.com/root\n",
		"modules/x/go.mod":   "module example.com/elsewhere\n",
		"testdata/m/go.mod":  "module whatever\n", // ignored: testdata
		".hidden/m/go.mod":   "module whatever\n",
		"_scratch/m/go.mod":  "module whatever\n",
		"vendor/a/b/go.mod":  "module whatever\n",
		"modules/y/z/go.mod": "module example.com/root/modules/y/z\n",
	})
	if _, err := findModules(root); !errors.Is(err, errLayout) {
		t.Fatalf("findModules = %v, want errLayout", err)
	}
	if err := os.Remove(filepath.Join(root, "modules/x/go.mod")); err != nil {
		t.Fatal(err)
	}
	mods, err := findModules(root)
	if err != nil || len(mods) != 2 || mods[1].tagPrefix() != "modules/y/z/" {
		t.Fatalf("findModules = %+v, %v", mods, err)
	}
}

// TestZipRefuses: names the go command refuses, case collisions and the
// size limits fail the zip.
func TestZipRefuses(t *testing.T) {
	lim := zipLimits{Total: 100, GoMod: 10, License: 10}
	for _, name := range []string{"a/../b", "./a", "a//b", "/a", "a/", "con.txt", "sub/LPT1", "GIT~1/x",
		"x*y", "q\"", "trail.", "back\\slash", "colon:x", "\xff.go", "tab\tx"} {
		_, err := writeModuleZip(io.Discard, "example.com/m", "v1.0.0", []zipFile{{Path: name, Data: []byte("x")}}, lim)
		if !errors.Is(err, errModuleFiles) {
			t.Errorf("name %q: err = %v, want errModuleFiles", name, err)
		}
	}
	for _, name := range []string{"a b.go", ".gitignore", "dir/ünïcode.txt", "x~y.go", "com10", "v1.0.0~", "a-b_c+d=e@f[g]{h}!#$%&(),^.txt"} {
		if _, err := writeModuleZip(io.Discard, "example.com/m", "v1.0.0", []zipFile{{Path: name, Data: []byte("x")}}, defaultLimits); err != nil {
			t.Errorf("name %q: %v", name, err)
		}
	}
	for name, files := range map[string][]zipFile{
		"case":    {{Path: "Readme.md", Data: []byte("a")}, {Path: "README.md", Data: []byte("b")}},
		"go.mod":  {{Path: "go.mod", Data: bytes.Repeat([]byte("x"), 11)}},
		"LICENSE": {{Path: "LICENSE", Data: bytes.Repeat([]byte("x"), 11)}},
		"total":   {{Path: "a", Data: bytes.Repeat([]byte("x"), 60)}, {Path: "b", Data: bytes.Repeat([]byte("x"), 41)}},
	} {
		if _, err := writeModuleZip(io.Discard, "example.com/m", "v1.0.0", files, lim); !errors.Is(err, errModuleFiles) {
			t.Errorf("%s: err = %v, want errModuleFiles", name, err)
		}
	}
	// At the limits exactly: accepted.
	files := []zipFile{{Path: "LICENSE", Data: bytes.Repeat([]byte("x"), 10)}, {Path: "a", Data: bytes.Repeat([]byte("x"), 80)}, {Path: "go.mod", Data: bytes.Repeat([]byte("x"), 10)}}
	if _, err := writeModuleZip(io.Discard, "example.com/m", "v1.0.0", files, zipLimits{Total: 1000, GoMod: 10, License: 10}); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}

// TestRepositoryZips: the zips of this repository's modules, from its
// working tree: the root's holds no file of modules/etcd (a module of its
// own), no .git and no .cache; every name is under module@version/; the
// nested module requires the root at the version.
func TestRepositoryZips(t *testing.T) {
	const v = "v0.0.0-ziptest"
	root := filepath.Join("..", "..")
	mods, err := findModules(root)
	if err != nil {
		t.Fatal(err)
	}
	var nested []string
	for _, m := range mods[1:] {
		nested = append(nested, m.Dir+"/")
	}
	if mods[0].Path != "github.com/fxelection/fxelection" || !slices.Contains(nested, "modules/etcd/") {
		t.Fatalf("modules: %+v", mods)
	}
	proxy := t.TempDir()
	if err := writeProxy(proxy, root, mods, v, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		files := readZip(t, filepath.Join(proxy, filepath.FromSlash(m.Path), "@v", v+".zip"))
		prefix := m.Path + "@" + v + "/"
		if _, ok := files[prefix+"go.mod"]; !ok {
			t.Errorf("%s: no go.mod", m.Path)
		}
		for name := range files {
			rel, ok := strings.CutPrefix(name, prefix)
			switch {
			case !ok:
				t.Errorf("%s: %s is not under %s", m.Path, name, prefix)
			case strings.HasPrefix(rel, ".git/"), strings.Contains(rel, "/.git/"), strings.HasPrefix(rel, ".cache/"):
				t.Errorf("%s: %s", m.Path, name)
			case m.Dir == "" && slices.ContainsFunc(nested, func(d string) bool { return strings.HasPrefix(rel, d) }):
				t.Errorf("root zip holds %s, a file of a nested module", name)
			}
		}
		switch m.Dir {
		case "":
			if _, ok := files[prefix+"fxelection/elector.go"]; !ok {
				t.Errorf("root zip has no fxelection/elector.go")
			}
		case "modules/etcd":
			if _, ok := files[prefix+"backend.go"]; !ok {
				t.Errorf("etcd zip has no backend.go")
			}
			if !strings.Contains(files[prefix+"go.mod"], "\tgithub.com/fxelection/fxelection "+v+"\n") {
				t.Errorf("etcd go.mod does not require the root at %s:\n%s", v, files[prefix+"go.mod"])
			}
		}
	}
}
