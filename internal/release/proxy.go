package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// errEscape is matched by errors about a path the proxy cannot encode.
var errEscape = errors.New("escape path")

// escapePath case-encodes a module path or version for a module proxy's
// URLs and files (go help goproxy): every upper-case ASCII letter becomes
// '!' followed by its lower case, so that modules differing only in case
// never share a file on a case-insensitive file system. A '!' of its own
// cannot be encoded.
func escapePath(s string) (string, error) {
	if s == "" || strings.ContainsRune(s, '!') {
		return "", fmt.Errorf("%w: %q is empty or holds '!'", errEscape, s)
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String(), nil
}

// fileURL returns the file:// URL of dir, for GOPROXY.
func fileURL(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:///C:/...
	}
	return "file://" + p
}

// writeProxy writes into proxyDir a module proxy (go help goproxy) holding
// every module of mods at version, from the working tree in root as it
// would be released: <module>/@v/<version>.zip, .mod (the released go.mod,
// the same as the zip's), .info, and the version added to @v/list. Module
// paths and versions are case-encoded. now is the .info time. It writes
// each file through a temporary one and a rename, and the list last.
func writeProxy(proxyDir, root string, mods []module, version string, now time.Time) error {
	ev, err := escapePath(version)
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    string
	}{version, now.UTC().Format(time.RFC3339)})
	if err != nil {
		return fmt.Errorf("proxy info: %w", err)
	}
	for _, m := range mods {
		gomod, _, err := releasedGoMod(m, mods, version)
		if err != nil {
			return err
		}
		files, err := zipFiles(root, m, gomod)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		ep, err := escapePath(m.Path)
		if err != nil {
			return err
		}
		vdir := filepath.Join(proxyDir, filepath.FromSlash(ep), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		var zbuf bytes.Buffer
		if _, err := writeModuleZip(&zbuf, m.Path, version, files, defaultLimits); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		if err := writeAtomic(filepath.Join(vdir, ev+".zip"), zbuf.Bytes()); err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(vdir, ev+".mod"), gomod); err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(vdir, ev+".info"), append(info, '\n')); err != nil {
			return err
		}
		if err := addToList(filepath.Join(vdir, "list"), version); err != nil {
			return err
		}
	}
	return nil
}

// zipFiles returns the files of module m's zip from the working tree in
// root, with gomod as its go.mod. A nested module without a LICENSE gets
// the root's, as the go command gives a module in a subdirectory of a
// repository.
func zipFiles(root string, m module, gomod []byte) ([]zipFile, error) {
	dir := filepath.Join(root, filepath.FromSlash(m.Dir))
	rels, err := moduleFiles(dir)
	if err != nil {
		return nil, err
	}
	files := []zipFile{{Path: "go.mod", Data: gomod}}
	license := false
	for _, rel := range rels {
		switch rel {
		case "go.mod":
			continue
		case "LICENSE":
			license = true
		}
		files = append(files, zipFile{Path: rel, Src: filepath.Join(dir, filepath.FromSlash(rel))})
	}
	if rootLicense := filepath.Join(root, "LICENSE"); m.Dir != "" && !license && isFile(rootLicense) {
		files = append(files, zipFile{Path: "LICENSE", Src: rootLicense})
	}
	slices.SortFunc(files, func(a, b zipFile) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// addToList adds version to the proxy list file at p (one version a line),
// keeping the versions already there, in their order.
func addToList(p, version string) error {
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("proxy list: %w", err)
	}
	versions := strings.Fields(string(old))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return writeAtomic(p, []byte(strings.Join(versions, "\n")+"\n"))
}

// writeAtomic writes data to p through a temporary file in p's directory
// and a rename, so a reader sees the old file or the whole new one.
func writeAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("proxy: %w", err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("proxy: %w", err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}
