package main

import (
	"fmt"
	"io"
)

// command is a subcommand's help: "example-app help NAME" and
// "example-app NAME --help" print it.
type command struct {
	name  string
	usage string // the synopsis lines, each starting "example-app"
	about string // what it does, in a paragraph
	// flags says whether the flag named name is the command's (nil: none).
	flags func(d flagDef) bool
}

// commands are the subcommands, in the order the usage lists them.
var commands = []command{
	{
		name:  "status",
		usage: "example-app status --backend NAME [backend flags] [--election NAME] [--watch [--retry D]]",
		about: "Prints the election's current leader as the store reports it (holder, term, expiry, metadata) and exits: 0 when the store answered (a leader or none), 1 when it failed (one line on stderr), 2 on bad input. With --watch it prints the leader on every change until interrupted.",
		flags: func(d flagDef) bool {
			return d.backend != "" || d.name == "backend" || d.name == "election" || d.name == "watch" || d.name == "retry"
		},
	},
	{
		name:  "validate",
		usage: "example-app validate --config FILE",
		about: "Parses and validates a configuration file without connecting to anything: every problem on its own line, exit 0 (valid) or 2.",
		flags: func(d flagDef) bool { return validateOnly[d.name] },
	},
	{
		name:  "modules",
		usage: "example-app modules",
		about: "Lists the registered modules (backends: fxelection.backends.<name>) and exits.",
	},
	{
		name:  "help",
		usage: "example-app help [COMMAND]",
		about: "Prints the usage, or COMMAND's (status, validate, modules, help).",
	},
}

// commandHelp returns the command named name, nil if there is none.
func commandHelp(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// commandNames lists the subcommands.
func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// printHelp writes the program's usage (topic "") or one command's to w.
// No line ends in a space.
func printHelp(w io.Writer, topic string) {
	if c := commandHelp(topic); c != nil {
		fmt.Fprintf(w, "usage: %s\n\n%s\n", c.usage, c.about)
		if c.flags != nil {
			fmt.Fprintln(w)
			printFlags(w, c.flags)
		}
		return
	}
	fmt.Fprint(w, `usage: example-app [flags]
       example-app --config FILE [--http ADDR] [--log-format F] [--work-interval D]
       example-app status [flags]
       example-app validate --config FILE
       example-app modules
       example-app help [COMMAND]

With no --backend and no --config, runs a three-candidate demo on the in-memory backend.
"status" prints the election's current leader from the store.
"validate" parses and validates a configuration file without connecting to anything: every problem on its own line, exit 0 (valid) or 2.
"modules" lists the registered modules (backends: fxelection.backends.<name>).
"help COMMAND" (or "COMMAND --help") describes one command.
Every flag can also be set with FXELECTION_<FLAG> (e.g. FXELECTION_REDIS_ADDR).

`)
	printFlags(w, func(flagDef) bool { return true })
}

// printFlags writes the flags keep selects, with their kinds, defaults and
// environment variables.
func printFlags(w io.Writer, keep func(flagDef) bool) {
	o := defaults()
	for _, d := range o.flagTable() {
		if !keep(d) {
			continue
		}
		name := "--" + d.name
		if k, ok := d.value.(interface{ kind() string }); ok && k.kind() != "" {
			name += " " + k.kind()
		}
		def := ""
		if v := d.value.String(); v != "" && v != "0" && v != "0s" && v != "false" && !d.secret {
			def = " (default " + v + ")"
		}
		fmt.Fprintf(w, "  %s\n    \t%s%s [%s]\n", name, d.usage, def, envName(d.name))
	}
}
