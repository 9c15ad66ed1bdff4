package modkit

import "errors"

// Sentinel errors of modules and of the registry. Package config's
// variables of the same names are these values: a document error wraps
// them whether a module or the decoder reported it.
var (
	// ErrRequired means a required setting is missing, null or empty.
	ErrRequired = errors.New("required")
	// ErrInvalidValue means a value has the right JSON type but is not
	// acceptable (a malformed duration).
	ErrInvalidValue = errors.New("invalid value")
	// ErrUnknownModule means a document names a module ID nobody registered.
	ErrUnknownModule = errors.New("unknown module")
	// ErrInvalidModuleID means a module ID does not have the ModuleID syntax.
	ErrInvalidModuleID = errors.New("invalid module ID")
	// ErrNotProvisioned is returned by an elector's backend operations when
	// its backend module is not provisioned (before the app starts, or after
	// it stopped).
	ErrNotProvisioned = errors.New("config: backend module not provisioned")
)
