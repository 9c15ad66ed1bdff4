package main

import (
	"bytes"
	"strings"
	"testing"
)

// helpOf runs example-app with args and returns what it printed on stdout,
// failing t unless it exits 0 with nothing on stderr.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut, noEnv); code != 0 || errOut.Len() != 0 {
		t.Fatalf("%q: code %d, stderr %q", args, code, errOut.String())
	}
	if out.Len() == 0 {
		t.Fatalf("%q printed nothing", args)
	}
	return out.String()
}

// TestHelpCommand: "help" prints the usage, as --help does; "help COMMAND"
// prints COMMAND's, as "COMMAND --help" does.
func TestHelpCommand(t *testing.T) {
	usage := helpOf(t, "--help")
	if got := helpOf(t, "help"); got != usage {
		t.Errorf("help printed\n%s\nwant the usage --help prints:\n%s", got, usage)
	}
	for _, c := range commands {
		got := helpOf(t, "help", c.name)
		if !strings.HasPrefix(got, "usage: "+c.usage+"\n") {
			t.Errorf("help %s printed\n%s\nwant its usage first", c.name, got)
		}
		if !strings.Contains(usage, "\n       "+strings.Fields(c.usage)[0]+" "+c.name) {
			t.Errorf("the usage does not list %s:\n%s", c.name, usage)
		}
		if c.name == "help" {
			continue
		}
		for _, h := range []string{"--help", "-h"} {
			if flagHelp := helpOf(t, c.name, h); flagHelp != got {
				t.Errorf("%s %s printed\n%s\nwant what help %s prints:\n%s", c.name, h, flagHelp, c.name, got)
			}
		}
	}
	if got := helpOf(t, "help", "--help"); got != helpOf(t, "help", "help") {
		t.Errorf("help --help printed\n%s\nwant help's usage", got)
	}
	if got := helpOf(t, "help", "status"); !strings.Contains(got, "--redis-addr") || !strings.Contains(got, "--watch") || strings.Contains(got, "--demo-duration") {
		t.Errorf("help status does not list exactly its flags:\n%s", got)
	}
}

func TestHelpUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"help", "nope"}, {"help", "status", "extra"}} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut, noEnv)
		lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
		if code != 2 || out.Len() != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "example-app: help") {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want exit 2 and one line", args, code, out.String(), errOut.String())
		}
	}
}

// TestHelpNoTrailingSpace: no line of any help output ends in a space or
// a tab (bool flags have no kind to print after their name).
func TestHelpNoTrailingSpace(t *testing.T) {
	outputs := map[string]string{"--help": helpOf(t, "--help")}
	for _, c := range commands {
		outputs["help "+c.name] = helpOf(t, "help", c.name)
	}
	for name, out := range outputs {
		for i, line := range strings.Split(out, "\n") {
			if strings.TrimRight(line, " \t") != line {
				t.Errorf("%s: line %d ends in white space: %q", name, i+1, line)
			}
		}
	}
}
