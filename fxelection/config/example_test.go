package config_test

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
)

// A document with two elections on one shared in-memory backend becomes an
// fx app that provides each elector by name and in the group.
func ExampleLoad() {
	opt, err := config.Load([]byte(`{
		"backends": {"mem": {"module": "fxelection.backends.memory"}},
		"elections": [
			{"name": "billing", "identity": "node-1", "backend": "mem"},
			{"name": "reports", "identity": "node-1", "backend": "mem", "lease_duration": "30s", "renew_deadline": "20s"}
		]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	app := fx.New(fx.NopLogger, opt,
		fx.Invoke(fx.Annotate(func(e *fxelection.Elector) {
			st := e.Status()
			fmt.Println(st.Election, st.Backend, e.Config().LeaseDuration)
		}, fx.ParamTags(`name:"reports"`))))
	if err := app.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	_ = app.Stop(context.Background())
	// Output: reports memory 30s
}

// Errors name the JSON path of every problem in the document.
func ExampleParse() {
	_, err := config.Parse([]byte(`{"elections": [
		{"name": "billing", "lease_duration": 15, "backend": {"module": "fxelection.backends.memory"}},
		{"name": "reports", "backend": {"module": "fxelection.backends.memory", "adr": "x"}},
		{"backend": "mem"}]}`))
	fmt.Println(err)
	// Output:
	// elections[0].lease_duration: wrong type: want a duration string such as "1.5s", got number
	// elections[1].backend.adr: unknown key
	// elections[2].name: required
}
