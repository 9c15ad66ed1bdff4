package fxelection

import (
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/internal/redact"
)

// redactErr passes a store failure through the one redaction path
// (backendkit.RedactError) before callbacks, observers, logs or Status see
// it; errors.As still finds a *backendkit.HeldError through it.
func redactErr(err error) error { return redact.Error[*backendkit.HeldError](err) }
