package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

var (
	// errDirty is matched when the working tree has changes or untracked
	// files.
	errDirty = errors.New("working tree not clean")
	// errTagExists is matched when a tag of the version exists already.
	errTagExists = errors.New("tag exists")
	// errChangelog is matched when CHANGELOG.md has no section for the
	// version.
	errChangelog = errors.New("changelog")
	// errGit is matched by the errors of git commands.
	errGit = errors.New("git")
)

// gitCmd runs git in dir and returns its output without the final newline;
// an error carries git's standard error.
func gitCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w %s: %w: %s", errGit, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// release prepares version in the git repository whose top is root: it
// checks, rewrites the in-repository requirements and commits them, and
// with tag creates one annotated tag per module on the result. It never
// pushes; it prints what to push.
func release(root string, mods []module, version string, tag bool, out io.Writer) error {
	if isPseudo(version) {
		return fmt.Errorf("%w: %s has the shape of a pseudo-version, which the go command reads as a commit", errInvalidVersion, version)
	}
	if err := checkTop(root); err != nil {
		return err
	}
	status, err := gitCmd(root, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return err
	}
	if status != "" {
		lines := strings.Split(status, "\n")
		if len(lines) > 5 {
			lines = append(lines[:5], "…")
		}
		return fmt.Errorf("%w: commit or stash first:\n%s", errDirty, strings.Join(lines, "\n"))
	}
	tags := make([]string, len(mods))
	for i, m := range mods {
		tags[i] = m.tagPrefix() + version
		if _, err := gitCmd(root, "rev-parse", "-q", "--verify", "refs/tags/"+tags[i]); err == nil {
			return fmt.Errorf("%w: %s (a published version never changes: release a new one)", errTagExists, tags[i])
		}
	}
	if !prerelease(version) {
		if err := checkChangelog(filepath.Join(root, "CHANGELOG.md"), version); err != nil {
			return err
		}
	}

	// Every go.mod is rewritten in memory first, so a bad one changes none.
	type rewrite struct {
		rel   string
		gomod []byte
	}
	var rewrites []rewrite
	for _, m := range mods {
		gomod, n, err := releasedGoMod(m, mods, version)
		if err != nil {
			return err
		}
		if n > 0 {
			rewrites = append(rewrites, rewrite{path.Join(m.Dir, "go.mod"), gomod})
			fmt.Fprintf(out, "%s: %d requirement(s) of this repository's modules set to %s\n", path.Join(m.Dir, "go.mod"), n, version)
		}
	}
	if len(rewrites) > 0 {
		add := []string{"add", "--"}
		for _, r := range rewrites {
			if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(r.rel)), r.gomod, 0o644); err != nil {
				return fmt.Errorf("rewrite %s: %w", r.rel, err)
			}
			add = append(add, r.rel)
		}
		if _, err := gitCmd(root, add...); err != nil {
			return err
		}
		msg := fmt.Sprintf("release %s: this repository's modules require each other at %s\n\nWritten by internal/release; the replace directives stay for development.", version, version)
		if _, err := gitCmd(root, "commit", "-q", "-m", msg); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "every requirement between this repository's modules is at %s already\n", version)
	}
	head, err := gitCmd(root, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	branch, _ := gitCmd(root, "rev-parse", "--abbrev-ref", "HEAD")
	push := "git push --atomic origin "
	if branch != "" && branch != "HEAD" {
		push += branch + " "
	}
	push += strings.Join(tags, " ")
	if !tag {
		fmt.Fprintf(out, "HEAD %s is the release commit; to tag it, run again with -tag, or:\n", head)
		for i, t := range tags {
			fmt.Fprintf(out, "\tgit tag -a %s -m '%s %s' %s\n", t, mods[i].Path, version, head)
		}
		fmt.Fprintf(out, "then push:\n\t%s\n", push)
		return nil
	}
	for i, t := range tags {
		if _, err := gitCmd(root, "tag", "-a", t, "-m", mods[i].Path+" "+version, head); err != nil {
			return err
		}
		fmt.Fprintf(out, "tagged %s at %s\n", t, head)
	}
	fmt.Fprintf(out, "nothing is pushed; push the branch and every tag together:\n\t%s\n", push)
	return nil
}

// checkTop reports whether root is the top of its git work tree: a nested
// module's tag prefix is its directory relative to the repository's top.
func checkTop(root string) error {
	top, err := gitCmd(root, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("%w: %w", errLayout, err)
	}
	a, err1 := filepath.EvalSymlinks(top)
	b, err2 := filepath.EvalSymlinks(abs)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%w: %w", errLayout, err)
	}
	if a != b {
		return fmt.Errorf("%w: the root module (%s) is not the top of its git repository (%s), so its tags would not name it", errLayout, b, a)
	}
	return nil
}

// checkChangelog reports whether the changelog at p has a section for
// version: a line "## <version>" (optionally "## [<version>]"), followed by
// anything, such as the date.
func checkChangelog(p, version string) error {
	text, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("%w: %w", errChangelog, err)
	}
	for line := range strings.SplitSeq(string(text), "\n") {
		heading, ok := strings.CutPrefix(line, "## ")
		if !ok {
			continue
		}
		if f := strings.Fields(heading); len(f) > 0 && strings.Trim(f[0], "[]") == version {
			return nil
		}
	}
	return fmt.Errorf("%w: %s has no \"## %s\" section: rename \"## Unreleased\" and commit first", errChangelog, filepath.Base(p), version)
}
