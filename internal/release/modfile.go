package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errGoMod is matched by errors about a go.mod file's text.
var errGoMod = errors.New("go.mod")

// span is one token of a go.mod line: line[start:end].
type span struct{ start, end int }

// tokens splits the code of one go.mod line (up to a // comment) into
// tokens: "(" and ")", quoted strings, and runs of other non-space bytes.
func tokens(line string) []span {
	var out []span
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case strings.HasPrefix(line[i:], "//"):
			return out
		}
		start := i
		switch c {
		case '(', ')':
			i++
		case '"', '`':
			i++
			for i < len(line) && line[i] != c {
				if c == '"' && line[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i+1, len(line))
		default:
			for i < len(line) && !strings.ContainsRune(" \t\r()\"`", rune(line[i])) && !strings.HasPrefix(line[i:], "//") {
				i++
			}
		}
		out = append(out, span{start, i})
	}
	return out
}

// unquote returns the value of a go.mod token: quoted strings unquoted.
func unquote(tok string) (string, error) {
	if tok != "" && (tok[0] == '"' || tok[0] == '`') {
		return strconv.Unquote(tok)
	}
	return tok, nil
}

// directive returns the first argument of the first single-line directive
// verb in gomod ("module", "go"), unquoted; "" when there is none.
func directive(gomod []byte, verb string) (string, error) {
	for line := range strings.SplitSeq(string(gomod), "\n") {
		toks := tokens(line)
		if len(toks) >= 2 && line[toks[0].start:toks[0].end] == verb {
			return unquote(line[toks[1].start:toks[1].end])
		}
	}
	return "", nil
}

// modulePath returns the module path gomod declares.
func modulePath(gomod []byte) (string, error) {
	p, err := directive(gomod, "module")
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: module directive: %w", errGoMod, err)
	case p == "" || p == "(":
		return "", fmt.Errorf("%w: no single-line module directive", errGoMod)
	}
	return p, nil
}

// rewriteRequires returns gomod with the version of every requirement of a
// module in paths set to version, in single-line require directives and in
// require blocks alike, and how many requirements it changed. Everything
// else (replace and exclude lines naming the same modules, comments such as
// "// indirect", spacing, line endings) stays as it was.
func rewriteRequires(gomod []byte, paths map[string]bool, version string) ([]byte, int, error) {
	lines := strings.Split(string(gomod), "\n")
	block, changed := "", 0
	for n, line := range lines {
		toks := tokens(line)
		if len(toks) == 0 {
			continue
		}
		word := func(i int) string { return line[toks[i].start:toks[i].end] }
		var req []span // the requirement's tokens: path, version
		switch {
		case block != "":
			if word(0) == ")" {
				block = ""
				continue
			}
			if block == "require" {
				req = toks
			}
		case len(toks) >= 2 && word(1) == "(":
			if word(len(toks)-1) != ")" {
				block = word(0)
			}
			continue
		case word(0) == "require":
			req = toks[1:]
		}
		if len(req) == 0 {
			continue
		}
		path, err := unquote(line[req[0].start:req[0].end])
		if err != nil {
			return nil, 0, fmt.Errorf("%w: line %d: %w", errGoMod, n+1, err)
		}
		if !paths[path] {
			continue
		}
		if len(req) < 2 {
			return nil, 0, fmt.Errorf("%w: line %d: requirement of %s has no version", errGoMod, n+1, path)
		}
		v := req[1]
		if line[v.start:v.end] == version {
			continue
		}
		lines[n] = line[:v.start] + version + line[v.end:]
		changed++
	}
	if block != "" {
		return nil, 0, fmt.Errorf("%w: %s block not closed", errGoMod, block)
	}
	return []byte(strings.Join(lines, "\n")), changed, nil
}
