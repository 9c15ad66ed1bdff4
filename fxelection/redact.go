package fxelection

import (
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/redact"
)

// redactErr passes a store failure through backendkit.RedactError, without
// secrets, before callbacks, observers, logs or Status see it; errors.As
// still finds a *backendkit.HeldError through it. A backend built on
// backendkit.Redacting has redacted the error with its credentials already
// (the one path errors leave a backend by), so this changes nothing then;
// it covers a backend that does not embed Redacting.
func redactErr(err error) error { return redact.Error[*backendkit.HeldError](err) }
