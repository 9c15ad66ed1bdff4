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
		name:  "run",
		usage: "example-app run --config FILE [--http ADDR] [--admin ADDR|off [--admin-remote]] [--log-format F] [--work-interval D]",
		about: "Runs every election of the configuration file (as example-app --config FILE does) with /metrics, /healthz, /readyz and /leader on --http, and the admin endpoint on --admin (default " + defaultAdmin + ", loopback only unless --admin-remote): GET /config shows the running document (secrets and placeholder values masked), POST /load replaces it. A load keeps every election whose settings and backend did not change running untouched (same leader, same term); removed elections stop and release their leases, added ones start, changed ones restart; a bad document changes nothing.",
		flags: func(d flagDef) bool { return withConfig[d.name] },
	},
	{
		name:  "reload",
		usage: "example-app reload --config FILE [--admin ADDR]",
		about: "Checks the configuration file as validate does, then POSTs it to the admin endpoint of a running \"example-app run\" (default " + defaultAdmin + "), which applies it keeping what did not change. Exit 0 when applied, 2 when the document is bad (each problem on its own line, naming its JSON path; nothing changed), 1 when the endpoint cannot be reached or failed to apply it.",
		flags: func(d flagDef) bool { return reloadOnly[d.name] },
	},
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
		about: "Prints the usage, or COMMAND's (run, reload, status, validate, modules, help).",
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
       example-app run --config FILE [--http ADDR] [--admin ADDR|off] [--log-format F] [--work-interval D]
       example-app reload --config FILE [--admin ADDR]
       example-app status [flags]
       example-app validate --config FILE
       example-app modules
       example-app help [COMMAND]

With no --backend and no --config, runs a three-candidate demo on the in-memory backend.
"run" (or just --config FILE) runs every election of a configuration file, with an admin endpoint (--admin) that "reload" sends a changed file to: elections the change did not touch keep running, with the same leader and term.
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
