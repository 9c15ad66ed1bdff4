package metrics

import (
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// ConfigModule is the configuration-file extension
// "fxelection.extensions.metrics": listed under a document's "extensions",
// it adds Module to the app the document builds, so every election the
// document describes is measured and covered by the health Handlers. It has
// no settings; the collectors go to the graph's prometheus.Registerer
// (prometheus.DefaultRegisterer when the graph has none). Do not list it in
// a document whose app also adds Module itself: fx refuses a second
// provider of *Metrics.
type ConfigModule struct{}

var _ modkit.ExtensionModule = ConfigModule{}

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{
		ID:  "fxelection.extensions.metrics",
		Doc: "Prometheus metrics and health handlers for every election in the document",
		New: func() modkit.Module { return new(ConfigModule) },
	}
}

// Options returns Module.
func (ConfigModule) Options() (fx.Option, error) { return Module, nil }
