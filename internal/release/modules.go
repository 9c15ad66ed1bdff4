package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// errLayout is matched by errors about the repository's module layout.
var errLayout = errors.New("module layout")

// module is one Go module of the repository.
type module struct {
	Path  string // module path
	Dir   string // slash-separated directory relative to the root; "" for the root
	GoMod []byte // go.mod as in the working tree
}

// tagPrefix is what the module's tags start with: "" for the root,
// "<dir>/" for a nested module (the go command's rule for a module in a
// subdirectory of its repository).
func (m module) tagPrefix() string {
	if m.Dir == "" {
		return ""
	}
	return m.Dir + "/"
}

// findModules returns the root module in dir, first, then every module
// nested below it, sorted by directory: every go.mod among the files that
// would go in a release (moduleFiles' candidates: in a git work tree, the
// files git would commit). Directories the go command ignores for packages
// (testdata, names starting with "." or "_") and vendor directories hold no
// modules of the release. A nested module's path must be the root's path
// followed by its directory, so that its tags (<dir>/vX.Y.Z) name it.
func findModules(dir string) ([]module, error) {
	root, err := readModule(dir, "")
	if err != nil {
		return nil, err
	}
	files, err := candidateFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("find modules: %w", err)
	}
	var dirs []string
	for _, f := range files {
		d := path.Dir(f)
		if path.Base(f) != "go.mod" || d == "." || ignoredDir(d) || !isFile(filepath.Join(dir, filepath.FromSlash(f))) {
			continue
		}
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	mods := []module{root}
	for _, d := range slices.Compact(dirs) {
		m, err := readModule(filepath.Join(dir, filepath.FromSlash(d)), d)
		if err != nil {
			return nil, err
		}
		if want := root.Path + "/" + m.Dir; m.Path != want {
			return nil, fmt.Errorf("%w: %s/go.mod declares %s, want %s for tags %sv… to name it", errLayout, m.Dir, m.Path, want, m.tagPrefix())
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// ignoredDir reports whether the slash path d has an element the go command
// ignores for packages (testdata, "." or "_" first), is vendored, or is
// under internal/: modules there (internal/tools, which build the test
// servers) are the repository's tooling, not released.
func ignoredDir(d string) bool {
	if d == "internal" || strings.HasPrefix(d, "internal/") {
		return true
	}
	for elem := range strings.SplitSeq(d, "/") {
		if elem == "testdata" || elem == "vendor" || strings.HasPrefix(elem, ".") || strings.HasPrefix(elem, "_") {
			return true
		}
	}
	return false
}

// readModule reads the module whose go.mod is in dir (rel relative to the
// root).
func readModule(dir, rel string) (module, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return module{}, fmt.Errorf("%w: %w", errLayout, err)
	}
	p, err := modulePath(gomod)
	if err != nil {
		return module{}, fmt.Errorf("%s: %w", path.Join(rel, "go.mod"), err)
	}
	return module{Path: p, Dir: rel, GoMod: gomod}, nil
}

// isFile reports whether p is a regular file (not following a symlink).
func isFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// modulePaths returns the set of the modules' paths.
func modulePaths(mods []module) map[string]bool {
	paths := make(map[string]bool, len(mods))
	for _, m := range mods {
		paths[m.Path] = true
	}
	return paths
}

// releasedGoMod returns m's go.mod as released at version: every
// requirement of a module of the repository at version.
func releasedGoMod(m module, mods []module, version string) ([]byte, int, error) {
	out, n, err := rewriteRequires(m.GoMod, modulePaths(mods), version)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path.Join(m.Dir, "go.mod"), err)
	}
	return out, n, nil
}
