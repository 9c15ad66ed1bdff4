// Command release prepares a release of this repository's Go modules: the
// root module (github.com/fxelection/fxelection) and every module nested
// below it (modules/etcd, modules/kubernetes; not the tooling under
// internal/tools), all released together under one version. The
// procedure around it is in RELEASING.md.
//
//	go run ./internal/release -version v0.4.0            # check, rewrite, commit
//	go run ./internal/release -version v0.4.0 -tag       # the same, then tag
//	go run ./internal/release -version v0.4.0 -proxy DIR # file GOPROXY only
//
// Without -proxy it checks that the working tree is clean, that the version
// is a canonical semantic version whose major fits the module paths, that no
// tag of that version exists and that CHANGELOG.md has a section for it (not
// asked of pre-releases); then it rewrites every in-repository module's
// requirement of another in-repository module (modules/etcd's of the root)
// to the version and commits that change, if there is one. The nested
// modules keep their replace directives: a consumer ignores the replace
// directives of its dependencies, and in the repository they build a nested
// module against the working tree's root. With -tag it then creates one
// annotated tag per module on that commit: vX.Y.Z for the root and
// <dir>/vX.Y.Z for the module in <dir>. It never pushes.
//
// With -proxy DIR it only writes a file-based module proxy (go help goproxy)
// holding every module at the version, as the working tree would be
// released (requirements rewritten, files as the go command zips them), so
// a consumer can be built against it with GOPROXY=file://DIR before anything
// is tagged. It does not change the working tree or git.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// errUsage is matched by errors about the command line.
var errUsage = errors.New("usage")

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run is the command: args without the program name; progress goes to out.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(out)
	version := fs.String("version", "", "the release version, vMAJOR.MINOR.PATCH[-PRERELEASE] (required)")
	tag := fs.Bool("tag", false, "after the commit, tag every module (vX.Y.Z, <dir>/vX.Y.Z); never pushes")
	proxy := fs.String("proxy", "", "only write a file GOPROXY of every module at -version into this directory; git untouched")
	dir := fs.String("C", ".", "the repository: the root module's directory")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case *version == "":
		return fmt.Errorf("%w: -version is required", errUsage)
	case *proxy != "" && *tag:
		return fmt.Errorf("%w: -proxy writes files only and cannot be combined with -tag", errUsage)
	}
	if err := checkVersion(*version); err != nil {
		return err
	}
	mods, err := findModules(*dir)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := checkMajor(m.Path, *version); err != nil {
			return err
		}
	}
	if *proxy != "" {
		if err := writeProxy(*proxy, *dir, mods, *version, time.Now()); err != nil {
			return err
		}
		for _, m := range mods {
			fmt.Fprintf(out, "wrote %s@%s\n", m.Path, *version)
		}
		fmt.Fprintf(out, "use it with GOPROXY=%s,$(go env GOPROXY) GONOSUMDB=%s and a throwaway GOMODCACHE (RELEASING.md)\n", fileURL(*proxy), mods[0].Path)
		return nil
	}
	return release(*dir, mods, *version, *tag, out)
}
