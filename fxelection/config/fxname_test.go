package config_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
)

func TestFxNameChars(t *testing.T) {
	opt, err := config.Load([]byte(doc(`{"name": "a", "fx_name": "Team.a-b_c:d/e", "backend": ` + mem + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	var e *fxelection.Elector
	app := fx.New(fx.NopLogger, opt, fx.Populate(fx.Annotate(&e, fx.ParamTags(`name:"Team.a-b_c:d/e"`))))
	if err := app.Err(); err != nil || e == nil {
		t.Fatal(err)
	}
}
