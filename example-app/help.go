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
		usage: "example-app run --config FILE [--http ADDR] [--admin unix/PATH|ADDR|off [admin flags]] [--log-format F] [--work-interval D]",
		about: "Runs every election of the configuration file (as example-app --config FILE does) with /metrics, /healthz, /readyz and /leader on --http, and the admin endpoint on --admin (default " + defaultAdmin + ", a unix socket only this user may connect to; on TCP every request needs the token of --admin-token-file or FXELECTION_ADMIN_TOKEN, and an address that is not loopback needs --admin-remote; placeholders in loaded documents are refused unless --admin-allow-placeholders). Whoever can use the endpoint controls the process. GET /config shows the running document (secrets and placeholder values masked), POST /load replaces it, POST /resign?election=NAME[&to=ID] makes this process's leader of NAME resign, handing the lease to the candidate ID when given (200 with what happened, \"not leading: nothing to do\" when it does not lead here; 404 for an unknown election). A load keeps every election whose settings and backend did not change running untouched (same leader, same term); removed elections stop and release their leases, added ones start, changed ones restart; a bad document changes nothing.",
		flags: func(d flagDef) bool { return withConfig[d.name] },
	},
	{
		name:  "reload",
		usage: "example-app reload --config FILE [--admin unix/PATH|ADDR] [--admin-token-file FILE]",
		about: "Checks the configuration file as validate does, then POSTs it to the admin endpoint of a running \"example-app run\" (default " + defaultAdmin + "; with the token of --admin-token-file or FXELECTION_ADMIN_TOKEN, which TCP needs), which applies it keeping what did not change. Exit 0 when applied, 2 when the document is bad (each problem on its own line, naming its JSON path; nothing changed), 1 when the endpoint cannot be reached or failed to apply it.",
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
		name:  "exec",
		usage: "example-app exec (--backend NAME [backend flags] [--election NAME] | --config FILE [--election NAME]) [--kill-after D] [--restart never|on-failure|always] -- CMD [ARGS…]",
		about: execAbout,
		flags: func(d flagDef) bool {
			return d.backend != "" || execWithConfig[d.name] || electionFlags[d.name]
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
		about: "Prints the usage, or COMMAND's (run, reload, status, exec, validate, modules, help).",
	},
}

// electionFlags are the flags of one election but its backend's settings.
var electionFlags = map[string]bool{"backend": true, "election": true, "id": true, "lease": true, "renew-deadline": true, "retry": true, "stop-timeout": true,
	"health-cmd": true, "health-interval": true, "health-threshold": true}

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
       example-app run --config FILE [--http ADDR] [--admin unix/PATH|ADDR|off] [--log-format F] [--work-interval D]
       example-app reload --config FILE [--admin unix/PATH|ADDR] [--admin-token-file FILE]
       example-app status [flags]
       example-app exec [flags] -- CMD [ARGS…]
       example-app validate --config FILE
       example-app modules
       example-app help [COMMAND]

With no --backend and no --config, runs a three-candidate demo on the in-memory backend.
"run" (or just --config FILE) runs every election of a configuration file, with an admin endpoint (--admin) that "reload" sends a changed file to: elections the change did not touch keep running, with the same leader and term.
"status" prints the election's current leader from the store.
"exec" campaigns and runs CMD only while leader (see "help exec" for its signal and timing rules).
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
		if d.envOnly {
			fmt.Fprintf(w, "  %s (environment only)\n    \t%s\n", envName(d.name), d.usage)
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

// execAbout is exec's help: what it does and its timing and signal rules.
const execAbout = `Campaigns for one election (the flags', or the --config document's election named by --election) and runs CMD only while this process leads. Logs go to stderr; the child's stdout and stderr pass through, its stdin is /dev/null.

The child runs in its own process group with FXELECTION_ELECTION, FXELECTION_IDENTITY and FXELECTION_TERM (the lease's fencing token, decimal) added to this process's environment (the FXELECTION_ variables that set flags, the variables a --config document's {env.NAME} placeholders read and any variable holding a secret flag's value are removed; this process is not dumpable, so a child of its uid cannot read its environment in /proc). On Linux this process is a child subreaper: every process the child starts, also one that leaves its group (setsid, a daemon), belongs to its tree, is signalled with it, and is killed and reaped before the next child starts or the lease is released. Guard its writes with FXELECTION_TERM: a paused host or process (SIGSTOP, a frozen VM) cannot stop its child in time. While this process is paused its child keeps running, beside the next leader's child, until this process resumes, finds its leadership over and stops it; a fence guard (redisfence, pgfence) given FXELECTION_ELECTION and FXELECTION_TERM refuses every write of that child made after the next leader's child wrote.

Timing: when leadership ends (the renew deadline passed, the lease was lost, or a resign), the whole group gets SIGTERM at once and SIGKILL --kill-after later. No other candidate can take the lease before --lease − --renew-deadline after the step-down, so --kill-after defaults to, and may not exceed, that window less a margin of 10% of it (at least 100ms): 4.5s with the defaults (15s, 10s). The next leadership's child starts only once every process of the previous child's tree is gone. If this process dies, even by SIGKILL, the kernel kills the child (not one that changed its uid, and not the processes it left behind); the lease it held then expires as usual.

Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to the group while the child runs. SIGINT and SIGTERM also stop the command: once the tree is gone (SIGKILL --kill-after after the signal), the lease is released and the command exits. SIGTSTP, SIGTTIN and SIGTTOU (Ctrl-Z) are ignored: a stopped command could not stop its child.

Child exit while leader, by --restart: never (default): release the lease and exit with the child's code; on-failure: restart after a non-zero exit, release and exit 0 after a zero exit; always: restart. Restarts wait 100ms, doubling per exit in a row up to 10s. Exit codes are the child's (128+N when signal N ended it, 127 when it could not start), 0 when a signal stopped the command with no child running, 2 for bad input, 1 when the store or the app failed. With --config only the named election runs (not the document's pools and lockers); with its no_recampaign the end of a leadership ends the command with the child's code, with exit_on_loss with code 1. The lease is released only after the child is gone.

No -n (semaphore, as consul lock -n): an election has one lease record with one holder on every backend. N holders need either one record listing them, which observed-time backends (S3, NATS KV) cannot expire (a follower takes over only a record unchanged for a whole lease, and N renewing holders change it every RetryPeriod/N), or N elections a candidate campaigns in at once while holding one, where each slot's term counts alone so FXELECTION_TERM orders nothing.`
