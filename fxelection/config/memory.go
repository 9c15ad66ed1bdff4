package config

import (
	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(Memory{}) }

// Memory is the module fxelection.backends.memory: in-process leases
// (memory.Backend) for one process. It has no settings. Each use
// in a document gets its own store, so candidates meant to compete in one
// process must share it through a Document.Backends entry.
type Memory struct{}

var _ modkit.BackendModule = (*Memory)(nil)

// ElectionModule returns the module's ModuleInfo.
func (Memory) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{
		ID:  "fxelection.backends.memory",
		Doc: "in-process leases for one process (demos, tests, single-process apps); no settings",
		New: func() modkit.Module { return new(Memory) },
	}
}

// Backend returns a new, empty memory.Backend.
func (*Memory) Backend() (fxelection.Backend, error) { return memory.New(), nil }
