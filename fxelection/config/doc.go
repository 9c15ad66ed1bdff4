// Package config turns a configuration document into a running fx app:
// Caddy-style modules with namespaced IDs, strict typed decoding, secrets
// from placeholders, and a Provision → Cleanup life cycle tied to fx.
//
// # Modules
//
// A module is a config struct registered from its package's init with
// package fxelection/modkit, which holds the registry, the module
// interfaces (BackendModule, ExtensionModule, Provisioner, …) and the
// setting types (Secret, Duration, host:port checks):
//
//	func init() { modkit.RegisterModule(Module{}) }
//
//	type Module struct {
//		Addr     string        `json:"addr" config:"required"`
//		Password modkit.Secret `json:"password,omitempty"`
//		client   *Client
//	}
//
//	func (Module) ElectionModule() modkit.ModuleInfo {
//		return modkit.ModuleInfo{ID: "fxelection.backends.example", Doc: "…",
//			New: func() modkit.Module { return new(Module) }}
//	}
//
// Its ID ("fxelection.backends.example") is a namespace plus a name. Modules
// in fxelection.backends implement modkit.BackendModule (they yield an
// fxelection.Backend); modules in fxelection.extensions implement
// modkit.ExtensionModule (they add fx options, such as metrics, to the app).
// Importing the package is all it takes to make the module usable in
// documents, so third-party modules plug in by import alone. This package
// reads the registry (modkit.Modules, modkit.GetModule) when it decodes a
// document; a backend package registers without importing this package, so
// a program that only calls a backend's constructor links none of the
// document machinery (YAML, health commands, locks and pools). A module
// may load other modules: a modkit.BackendRef field in its settings is
// decoded and validated with the document, and provisioned by
// modkit.Context.ProvisionBackend.
//
// # Documents
//
// A document (see Document), JSON or YAML (LoadFile reads .yaml and .yml
// files as YAML), lists elections, each with its timing, identity,
// metadata and backend module, inline or shared through "backends"; pools
// (package fxelection/pool); lockers (package fxelection/lock); and
// optional extensions. It has at least one election, pool or locker. An
// election takes the fields of fxelection.Config in snake case — name
// (required), identity, metadata, lease_duration,
// renew_deadline, retry_period, max_backoff, stop_timeout,
// keep_lease_on_stop, no_recampaign, exit_on_loss, priority,
// priority_grace, preempt, min_tenure; durations are strings
// such as "1.5s", never numbers — plus fx_name (default: the name), health
// and backend: a module object, or the name of an entry of "backends".
// health gates campaigning on the candidate's own health (see Health): an
// object with exactly one of command (an argv array, run without a shell:
// healthy iff it exits 0 within the interval; CommandCheck) and http (an
// http or https URL: healthy iff a GET answers 2xx within the interval;
// HTTPCheck), plus interval (default: the retry_period) and threshold
// (default: 3), as in {"command": ["pg_isready"], "interval": "5s"}.
// exit_on_loss shuts the app down with exit code 1 when the election's
// leadership ends other than by the app's stop (fxelection.Config.ExitOnLoss). Elections naming the same
// entry share one provisioned module (one client, one pool). Every elector
// is provided under its fx name tag and in the group fxelection.GroupTag,
// where metrics and health find it. An election without an identity gets
// the default (host, pid and a random suffix, new at every start); a fixed
// one, which lets a restarted process re-acquire its lease at once, comes
// from a placeholder such as "{env.POD_NAME}".
//
// A pool (see Pool) spreads shards over the workers that share its name
// and store: its keys are pool.Config's in snake case — name (required),
// identity, max_workers, max_moves, lease_duration, renew_deadline,
// retry_period — plus exactly one of shards (the shards' names) and
// shard_count (N shards named "0" to "N-1"), at most 100,000
// (MaxPoolShards) per pool and in all the document's pools together, and
// backend, as an election's. For example
// {"name": "orders", "shard_count": 64, "identity": "{env.HOSTNAME}",
// "backend": "shared"}. Every pool is provided as a *pool.Pool under the
// fx name tag of its name, started and stopped with the app; its shard
// electors are not in fxelection.GroupTag's group. Pool names are unique
// among pools and fit an fx name tag; a pool and an election may share a
// name (they are different types in the graph, and looked up apart in a
// Runtime). The pool's own elections are "<name>#shard/<shard>" and
// "<name>#member/<k>": no name in a document (election, pool, shard) may
// contain '#', so none of them ever meets another's records.
//
// A locker (see Locker) is a *lock.Locker that the application takes
// fenced locks with: its keys are lock.Options' in snake case — name
// (required), identity, lease_duration, renew_deadline, retry_period —
// and backend, as an election's. For example
// {"name": "reports", "identity": "{env.HOSTNAME}", "lease_duration": "30s",
// "renew_deadline": "20s", "backend": "shared"}. The name is the Locker's
// fx name tag, not a lock's key: the code that injects the Locker chooses
// the keys when it calls Acquire. Locker names are unique among lockers
// and fit an fx name tag; a locker may share its name with an election or
// a pool. Each Locker joins the fxelection.Group of its backend module's
// electors (their renewals share batches) and is closed on the app's stop
// before its module is cleaned up, which releases the locks it still
// holds. Its backend is provisioned when the app starts: take locks from
// an OnStart hook or later, never in an fx.Invoke.
//
// # Bounds
//
// A document is hostile input too. It may hold at most 4 MiB
// (MaxDocumentBytes) and 1,048,576 values (MaxValues) after YAML aliases
// and placeholders are expanded (every alias use and every substituted
// value is counted); past either, Load fails with ErrTooLarge. Parse time
// and memory grow linearly with the document. Placeholders are expanded
// only under keys the document's types accept, never under an unknown key,
// and each is resolved once per document. {file.PATH} and LoadFile accept
// only regular files (a FIFO, socket or device is an error naming the
// placeholder, and opening never blocks), and a placeholder file may hold
// at most 1 MiB (MaxPlaceholderFile). No error quotes a value: each names
// the JSON path and what is wrong.
//
// # Life cycle
//
// Load (or Parse, then Build) goes through these steps; each of the first
// four reports every problem it finds, as *PathError values naming the JSON
// path ("elections[1].backend.addr: required"), and nothing is dialled
// before all four have passed for the whole document:
//
//  1. Parse: well-formed JSON, valid UTF-8, no duplicate keys, bounded depth.
//  2. Placeholders: every "{env.NAME}" and "{file.PATH}" in a string value
//     is replaced; a variable that is not set or a file that cannot be read
//     is an error naming the variable or file, never a value.
//  3. Decode: each module's New gives an empty config struct (no side
//     effects) into which its settings are decoded strictly: unknown keys,
//     wrong types, malformed durations and missing `config:"required"`
//     settings are errors.
//  4. Validate: every module implementing Validator checks its settings
//     (no I/O: unlike Caddy, Validate runs before Provision, so that a bad
//     setting anywhere in the document stops the app before any client is
//     created), each election's fxelection.Config passes
//     Config.Validate, each pool's pool.Config passes pool.New's
//     checks, and each locker's lock.Options pass Options.Validate.
//  5. Build returns fx options. Electors, pools and lockers are
//     constructed with the graph; on app start each backend module's hook
//     runs first: Provision(ctx) (if implemented), then Backend(), whose
//     result the electors, pools and lockers use; then the electors start
//     campaigning and the pools start.
//  6. On app stop the electors and pools stop first (releasing their
//     leases) and the lockers close (releasing their locks), then each
//     module's clean-up runs, then that of the modules it provisioned:
//     CleanupContext with fx's stop context where the module implements
//     ContextCleanerUpper (so it can return by the stop deadline), else
//     Cleanup (fx stops waiting for it at the deadline; the call runs on).
//     If Provision or Backend fails, the module is cleaned up at once; fx
//     then stops, and so cleans up, every module, elector and pool that
//     had started. A failed start therefore leaks nothing.
//
// A module shared through "backends" is provisioned once and cleaned up
// after the last elector, pool or locker using it has stopped. Errors from
// Validate, Provision, Backend and Cleanup are wrapped with the module's
// path and ID; a panic in them becomes an error.
//
// # Running and reloading without an fx app
//
// A Runtime runs a Document's elections, pools and lockers with the same
// module life cycle, without an fx app, and Apply replaces the running
// document by another, as Caddy's config reload does: the new one is
// validated and its new or changed modules provisioned first (if either
// fails, nothing changes); then elections whose settings and backend
// module did not change keep running untouched (the same
// *fxelection.Elector, no hand-over, the same term), removed ones stop and
// release their leases, added ones start and changed ones restart; pools
// likewise (the same *pool.Pool, found by name with Runtime.Pool), and
// lockers (the same *lock.Locker, found by name with Runtime.Locker; a
// removed or changed one is closed, releasing its locks). A module is provisioned anew only
// when its ID or settings changed, compared after placeholder expansion
// with secrets included. RuntimeOptions.Attach hooks every elector of an
// election the runtime starts (log lines, metrics, leader work), and
// RuntimeOptions.LockObserver observes every locker. A Runtime does not
// run extensions: they are fx options.
//
// # Secrets
//
// Secrets come from placeholders: "{env.NAME}" (an unset variable is an
// error) and "{file.PATH}" (the file's content, one trailing newline
// removed). modkit.Secret holds a setting that must not be printed: every fmt
// verb, JSON, text and slog output show "xxxxx"; only Value returns it.
// Values that placeholders substituted, and every Secret, are redacted
// from errors that modules return from Validate, Provision, Backend and
// Cleanup, in every spelling (raw, Go-quoted, JSON- or YAML-escaped): a
// value of 8 bytes or more wherever any 8-byte run of it appears (so a
// module that cuts a value short before quoting it leaks nothing), a
// shorter one of at least 4 bytes where it appears whole. A fuzz target
// over whole documents with a secret planted in every position checks
// this.
package config
