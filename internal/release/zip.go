package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// errModuleFiles is matched by errors about the files that go in a module
// zip: a name the go command refuses, a case collision, a size limit.
var errModuleFiles = errors.New("module files")

// zipLimits are the go command's bounds on a module zip (go help
// module-auth; golang.org/x/mod/zip): the files' total uncompressed size
// and the zip file's size, go.mod's size and LICENSE's size.
type zipLimits struct {
	Total, GoMod, License int64
}

// defaultLimits are the go command's: 500 MiB, 16 MiB, 16 MiB.
var defaultLimits = zipLimits{Total: 500 << 20, GoMod: 16 << 20, License: 16 << 20}

// zipFile is one file of a module zip: its slash path in the module and
// either its contents (Data) or the file holding them (Src).
type zipFile struct {
	Path string
	Src  string
	Data []byte
}

// vcsDirs are version control directories, never part of a module.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true}

// moduleFiles returns the slash paths (relative to dir, sorted) of the files
// of the module in dir, as the go command puts them in a module zip:
// regular files only, no version control directories, no directory that
// holds a go.mod of its own (a nested module, wherever it is), no vendored
// package, no .cache at the top (this repository's tool cache). In a git
// work tree the candidates are the files git would commit (tracked or
// untracked, not ignored: git ls-files, read only), so build output and
// other ignored files stay out as they would from a tag; elsewhere every
// file under dir.
func moduleFiles(dir string) ([]string, error) {
	candidates, err := candidateFiles(dir)
	if err != nil {
		return nil, err
	}
	nested := map[string]bool{} // directory → holds a go.mod
	inNested := func(rel string) bool {
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			has, ok := nested[d]
			if !ok {
				has = isFile(filepath.Join(dir, filepath.FromSlash(d), "go.mod"))
				nested[d] = has
			}
			if has {
				return true
			}
		}
		return false
	}
	var files []string
	for _, rel := range candidates {
		if excluded(rel) || inNested(rel) || !isFile(filepath.Join(dir, filepath.FromSlash(rel))) {
			continue
		}
		files = append(files, rel)
	}
	sort.Strings(files)
	return files, nil
}

// excluded reports whether the slash path rel (a file) is left out of a
// module zip by its name alone.
func excluded(rel string) bool {
	elems := strings.Split(rel, "/")
	dirs := elems[:len(elems)-1]
	for i, d := range dirs {
		if vcsDirs[d] {
			return true
		}
		// A vendored package: a file in a subdirectory of a vendor
		// directory (vendor/modules.txt itself is kept, as the go
		// command does).
		if d == "vendor" && i < len(dirs)-1 {
			return true
		}
	}
	return len(dirs) > 0 && dirs[0] == ".cache"
}

// candidateFiles lists the files under dir that may go in its module zip:
// git's view when dir is in a git work tree, else every file.
func candidateFiles(dir string) ([]string, error) {
	inside, err := exec.Command("git", "-C", dir, "rev-parse", "--is-inside-work-tree").Output()
	if err != nil || strings.TrimSpace(string(inside)) != "true" {
		return walkFiles(dir)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	seen := map[string]bool{}
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f != "" && !seen[f] { // a file in conflict is listed once per stage
			seen[f] = true
			files = append(files, f)
		}
	}
	return files, nil
}

// walkFiles lists every file under dir (slash paths), skipping version
// control directories and the top .cache.
func walkFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if vcsDirs[d.Name()] || rel == ".cache" {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list module files: %w", err)
	}
	return files, nil
}

// checkFilePath reports whether the go command accepts rel as the path of a
// file in a module zip: valid UTF-8; elements that are not empty, "." or
// "..", do not end in a dot, and hold only letters, digits and
// !#$%&()+,-.=@[]^_{}~ and space; no Windows device name (CON, NUL, COM1…)
// and no Windows short name (GIT~1) as an element's part before its first
// dot.
func checkFilePath(rel string) error {
	if !utf8.ValidString(rel) {
		return fmt.Errorf("%w: %q: invalid UTF-8", errModuleFiles, rel)
	}
	for elem := range strings.SplitSeq(rel, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return fmt.Errorf("%w: %q: empty, . or .. element", errModuleFiles, rel)
		}
		if strings.HasSuffix(elem, ".") {
			return fmt.Errorf("%w: %q: element ends in a dot", errModuleFiles, rel)
		}
		for _, r := range elem {
			ok := r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
				strings.ContainsRune("!#$%&()+,-.=@[]^_{}~ ", r) || r >= utf8.RuneSelf && unicode.IsLetter(r)
			if !ok {
				return fmt.Errorf("%w: %q: character %q not allowed", errModuleFiles, rel, r)
			}
		}
		short, _, _ := strings.Cut(elem, ".")
		if windowsDevice(short) {
			return fmt.Errorf("%w: %q: %s is a Windows device name", errModuleFiles, rel, short)
		}
		if i := strings.IndexByte(short, '~'); i >= 0 && isDigits(short[i+1:]) {
			return fmt.Errorf("%w: %q: %s looks like a Windows short name", errModuleFiles, rel, short)
		}
	}
	return nil
}

// windowsDevice reports whether name is a reserved Windows device name.
func windowsDevice(name string) bool {
	switch u := strings.ToUpper(name); u {
	case "CON", "PRN", "AUX", "NUL":
		return true
	default:
		return len(u) == 4 && (strings.HasPrefix(u, "COM") || strings.HasPrefix(u, "LPT")) && u[3] >= '1' && u[3] <= '9'
	}
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// writeModuleZip writes the module zip of modPath at version to w: every
// file under "<modPath>@<version>/", in the given order, deflated, no
// directory entries. It refuses file names the go command refuses, two
// names that differ only in case, and sizes past lim (go.mod, LICENSE,
// all files together); it returns the zip's size.
func writeModuleZip(w io.Writer, modPath, version string, files []zipFile, lim zipLimits) (int64, error) {
	folded := map[string]string{}
	for _, f := range files {
		if err := checkFilePath(f.Path); err != nil {
			return 0, err
		}
		k := strings.ToLower(f.Path)
		if other, ok := folded[k]; ok {
			return 0, fmt.Errorf("%w: %q and %q differ only in case", errModuleFiles, other, f.Path)
		}
		folded[k] = f.Path
	}
	cw := &countingWriter{w: w}
	zw := zip.NewWriter(cw)
	prefix := modPath + "@" + version + "/"
	var total int64
	for _, f := range files {
		limit := lim.Total - total
		switch f.Path {
		case "go.mod":
			limit = min(limit, lim.GoMod)
		case "LICENSE":
			limit = min(limit, lim.License)
		}
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: prefix + f.Path, Method: zip.Deflate})
		if err != nil {
			return 0, fmt.Errorf("zip %s: %w", f.Path, err)
		}
		n, err := copyFile(fw, f, limit)
		if err != nil {
			return 0, err
		}
		total += n
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("zip: %w", err)
	}
	if cw.n > lim.Total {
		return 0, fmt.Errorf("%w: zip of %s is %d bytes, over %d", errModuleFiles, modPath, cw.n, lim.Total)
	}
	return cw.n, nil
}

// copyFile copies f's contents to w, failing when there are more than limit
// bytes; it returns how many it copied.
func copyFile(w io.Writer, f zipFile, limit int64) (int64, error) {
	var r io.Reader = bytes.NewReader(f.Data)
	if f.Data == nil {
		src, err := os.Open(f.Src)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", errModuleFiles, err)
		}
		defer src.Close()
		r = src
	}
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err != nil {
		return n, fmt.Errorf("zip %s: %w", f.Path, err)
	}
	if n > limit {
		return n, fmt.Errorf("%w: %s takes the module past a size limit (go.mod and LICENSE 16 MiB, all files 500 MiB)", errModuleFiles, f.Path)
	}
	return n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
