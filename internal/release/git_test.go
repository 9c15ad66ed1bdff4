package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/internal/testserver"
)

// isolateGit makes the git commands of the test (and of the tool) ignore
// the machine's git configuration and commit as a fixed user.
func isolateGit(t *testing.T) {
	t.Helper()
	if _, err := gitCmd(".", "version"); err != nil {
		testserver.Require(t, fmt.Errorf("%w: git: %v", testserver.ErrNotInstalled, err)) // fails under CI=true
	}
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "fxelection",
		"GIT_AUTHOR_EMAIL":    "dev@fxelection.invalid",
		"GIT_COMMITTER_NAME":  "fxelection",
		"GIT_COMMITTER_EMAIL": "dev@fxelection.invalid",
	} {
		t.Setenv(k, v)
	}
}

// mustGit runs git in dir and fails the test on an error.
func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newRepo returns a git repository holding a root module and a nested one
// (modules/etcd) that requires it at the zero pseudo-version with a
// replace, and a CHANGELOG with a v1.2.3 section, all committed.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod":              "module example.com/root\n\ngo 1.26\n",
		"root.go":             "package root\n",
		"CHANGELOG.md":        "# Changelog\n\n## v1.2.3 (2030-01-02)\n\n- Things.\n",
		".gitignore":          "/bin/\n",
		"modules/etcd/go.mod": "module example.com/root/modules/etcd\n\ngo 1.26\n\nreplace example.com/root => ../..\n\nrequire example.com/root v0.0.0-00010101000000-000000000000\n",
		"modules/etcd/e.go":   "package etcd\n",
	})
	mustGit(t, dir, "init", "-q", "-b", "main")
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// TestReleaseCommitsAndTags: a release rewrites the nested module's
// requirement in one commit (keeping its replace) and, with -tag, puts one
// annotated tag per module on it; a second run for the version refuses.
func TestReleaseCommitsAndTags(t *testing.T) {
	isolateGit(t)
	dir := newRepo(t)
	writeTree(t, dir, map[string]string{"bin/ignored": "build output\n"}) // ignored files do not make it dirty
	before := mustGit(t, dir, "rev-parse", "HEAD")

	var out strings.Builder
	if err := run([]string{"-C", dir, "-version", "v1.2.3"}, &out); err != nil {
		t.Fatal(err)
	}
	if tags := mustGit(t, dir, "tag"); tags != "" {
		t.Fatalf("tags without -tag: %q", tags)
	}
	commit := mustGit(t, dir, "rev-parse", "HEAD")
	if commit == before {
		t.Fatal("no release commit")
	}
	if files := mustGit(t, dir, "diff", "--name-only", before, commit); files != "modules/etcd/go.mod" {
		t.Errorf("release commit changes %q", files)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "modules/etcd/go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "module example.com/root/modules/etcd\n\ngo 1.26\n\nreplace example.com/root => ../..\n\nrequire example.com/root v1.2.3\n"; string(gomod) != want {
		t.Errorf("modules/etcd/go.mod:\n%s\nwant:\n%s", gomod, want)
	}
	if !strings.Contains(out.String(), "git tag -a modules/etcd/v1.2.3") {
		t.Errorf("output names no tag command:\n%s", out.String())
	}

	// Again with -tag: nothing left to rewrite, so no commit; two tags.
	out.Reset()
	if err := run([]string{"-C", dir, "-version", "v1.2.3", "-tag"}, &out); err != nil {
		t.Fatal(err)
	}
	if head := mustGit(t, dir, "rev-parse", "HEAD"); head != commit {
		t.Errorf("second run committed again")
	}
	for _, tag := range []string{"v1.2.3", "modules/etcd/v1.2.3"} {
		if typ := mustGit(t, dir, "cat-file", "-t", "refs/tags/"+tag); typ != "tag" {
			t.Errorf("%s is a %s, want an annotated tag", tag, typ)
		}
		if at := mustGit(t, dir, "rev-parse", tag+"^{commit}"); at != commit {
			t.Errorf("%s at %s, want %s", tag, at, commit)
		}
	}
	if !strings.Contains(out.String(), "git push --atomic origin main v1.2.3 modules/etcd/v1.2.3") {
		t.Errorf("output:\n%s", out.String())
	}
	if err := run([]string{"-C", dir, "-version", "v1.2.3", "-tag"}, io.Discard); !errors.Is(err, errTagExists) {
		t.Errorf("third run: %v, want errTagExists", err)
	}
}

func TestReleaseRefuses(t *testing.T) {
	isolateGit(t)
	dir := newRepo(t)
	head := mustGit(t, dir, "rev-parse", "HEAD")
	for name, c := range map[string]struct {
		args []string
		want error
	}{
		"no changelog section": {[]string{"-version", "v1.3.0"}, errChangelog},
		"pseudo-version":       {[]string{"-version", "v0.0.0-20300102030405-abcdefabcdef"}, errInvalidVersion},
		"major 2":              {[]string{"-version", "v2.0.0"}, errInvalidVersion},
		"invalid":              {[]string{"-version", "1.2.3"}, errInvalidVersion},
		"no version":           {nil, errUsage},
		"proxy and tag":        {[]string{"-version", "v1.2.3", "-tag", "-proxy", t.TempDir()}, errUsage},
		"argument":             {[]string{"-version", "v1.2.3", "extra"}, errUsage},
	} {
		if err := run(append([]string{"-C", dir}, c.args...), io.Discard); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// A pre-release needs no changelog section.
	if err := run([]string{"-C", dir, "-version", "v1.3.0-rc.1"}, io.Discard); err != nil {
		t.Errorf("pre-release: %v", err)
	}
	mustGit(t, dir, "reset", "-q", "--hard", head)

	writeTree(t, dir, map[string]string{"new.go": "package root\n"})
	if err := run([]string{"-C", dir, "-version", "v1.2.3"}, io.Discard); !errors.Is(err, errDirty) {
		t.Errorf("untracked file: %v, want errDirty", err)
	}
	if err := os.Remove(filepath.Join(dir, "new.go")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"root.go": "package root // changed\n"})
	if err := run([]string{"-C", dir, "-version", "v1.2.3"}, io.Discard); !errors.Is(err, errDirty) {
		t.Errorf("changed file: %v, want errDirty", err)
	}
	mustGit(t, dir, "checkout", "-q", "--", "root.go")

	// The root module must be the repository's top.
	if err := run([]string{"-C", filepath.Join(dir, "modules/etcd"), "-version", "v1.2.3"}, io.Discard); !errors.Is(err, errLayout) {
		t.Errorf("nested module as root: %v, want errLayout", err)
	}
	if now := mustGit(t, dir, "rev-parse", "HEAD"); now != head {
		t.Errorf("a refused release committed")
	}
	if tags := mustGit(t, dir, "tag"); tags != "" {
		t.Errorf("a refused release tagged %q", tags)
	}
}
