// Package config turns a configuration document into a running fx app:
// Caddy-style modules with namespaced IDs, strict typed decoding, secrets
// from placeholders, and a Provision → Cleanup life cycle tied to fx.
//
// # Modules
//
// A module is a config struct registered from its package's init:
//
//	func init() { config.RegisterModule(Module{}) }
//
//	type Module struct {
//		Addr     string        `json:"addr" config:"required"`
//		Password config.Secret `json:"password,omitempty"`
//		client   *Client
//	}
//
//	func (Module) ElectionModule() config.ModuleInfo {
//		return config.ModuleInfo{ID: "fxelection.backends.example", Doc: "…",
//			New: func() config.Module { return new(Module) }}
//	}
//
// Its ID ("fxelection.backends.example") is a namespace plus a name. Modules
// in fxelection.backends implement BackendModule (they yield an
// fxelection.Backend); modules in fxelection.extensions implement
// ExtensionModule (they add fx options, such as metrics, to the app).
// Importing the package is all it takes to make the module usable in
// documents, so third-party modules plug in by import alone. Modules and
// GetModule list what is registered (for a `list-modules` command). A
// module may load other modules: a BackendRef field in its settings is
// decoded and validated with the document, and provisioned by
// Context.ProvisionBackend.
//
// # Documents
//
// A document (see Document) lists elections, each with its timing, identity,
// metadata and backend module, inline or shared through "backends"; and
// optional extensions. Every elector is provided under its fx name tag and
// in the group fxelection.GroupTag, where metrics and health find it.
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
//     created), and each election's fxelection.Config passes
//     Config.Validate.
//  5. Build returns fx options. Electors are constructed with the graph; on
//     app start each backend module's hook runs first: Provision(ctx) (if
//     implemented), then Backend(), whose result the electors use; then the
//     electors start campaigning.
//  6. On app stop the electors stop first (releasing their leases), then
//     each module's Cleanup runs, then that of the modules it provisioned.
//     If Provision or Backend fails, the module is cleaned up at once; fx
//     then stops, and so cleans up, every module and elector that had
//     started. A failed start therefore leaks nothing.
//
// A module shared through "backends" is provisioned once and cleaned up
// after the last elector using it has stopped. Errors from Validate,
// Provision, Backend and Cleanup are wrapped with the module's path and ID;
// a panic in them becomes an error.
//
// # Secrets
//
// Secret holds a setting that must not be printed: every fmt verb, JSON,
// text and slog output show "xxxxx"; only Value returns it. Values that
// placeholders substituted, and every Secret, are redacted from errors that
// modules return from Validate, Provision, Backend and Cleanup.
package config
