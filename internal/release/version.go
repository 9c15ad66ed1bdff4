package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// errInvalidVersion is matched by errors about the release version.
var errInvalidVersion = errors.New("invalid version")

// checkVersion reports whether v is a canonical module version: "v", then
// MAJOR.MINOR.PATCH (decimal, no leading zeros), then an optional
// "-PRERELEASE" of dot-separated identifiers of [0-9A-Za-z-] (numeric ones
// without leading zeros). Build metadata ("+...") is refused: the go
// command drops it, so a tag carrying it names no module version.
func checkVersion(v string) error {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return fmt.Errorf("%w: %q does not start with v", errInvalidVersion, v)
	}
	if strings.Contains(rest, "+") {
		return fmt.Errorf("%w: %q has build metadata", errInvalidVersion, v)
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return fmt.Errorf("%w: %q is not vMAJOR.MINOR.PATCH", errInvalidVersion, v)
	}
	for _, n := range nums {
		if !isNumber(n) {
			return fmt.Errorf("%w: %q: %q is not a number without leading zeros", errInvalidVersion, v, n)
		}
	}
	if !hasPre {
		return nil
	}
	for id := range strings.SplitSeq(pre, ".") {
		if id == "" {
			return fmt.Errorf("%w: %q has an empty pre-release identifier", errInvalidVersion, v)
		}
		digits := true
		for _, c := range []byte(id) {
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				digits = false
			default:
				return fmt.Errorf("%w: %q: pre-release %q has a character outside [0-9A-Za-z-]", errInvalidVersion, v, id)
			}
		}
		if digits && !isNumber(id) {
			return fmt.Errorf("%w: %q: pre-release %q has a leading zero", errInvalidVersion, v, id)
		}
	}
	return nil
}

// isNumber reports whether s is a decimal number without leading zeros.
func isNumber(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// pseudoSuffix matches the end of a pseudo-version's pre-release: a
// 14-digit UTC time and a 12-digit commit hash prefix.
var pseudoSuffix = regexp.MustCompile(`(^|\.)[0-9]{14}-[0-9a-f]{12}$`)

// isPseudo reports whether the checked version v has the shape of a
// pseudo-version, which the go command reads as a commit, not a tag.
func isPseudo(v string) bool {
	_, pre, ok := strings.Cut(v, "-")
	return ok && pseudoSuffix.MatchString(pre)
}

// prerelease reports whether the checked version v has a pre-release part.
func prerelease(v string) bool { return strings.Contains(v, "-") }

// checkMajor reports whether the checked version v may be a version of the
// module path: a path ending in /vN (N ≥ 2) takes only vN.x.y, any other
// path only v0 and v1 (semantic import versioning).
func checkMajor(path, v string) error {
	major, _, _ := strings.Cut(v[1:], ".")
	want := "0 or 1"
	ok := major == "0" || major == "1"
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		if n, found := strings.CutPrefix(path[i+1:], "v"); found && isNumber(n) {
			if k, err := strconv.Atoi(n); err == nil && k >= 2 {
				want, ok = n, major == n
			}
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s takes major version %s, not %s (a new major version needs a /vN module path)", errInvalidVersion, path, want, major)
	}
	return nil
}
