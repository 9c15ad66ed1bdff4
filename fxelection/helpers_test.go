package fxelection_test

import (
	"errors"
	"testing"
	"testing/synctest"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func synctestRun(t *testing.T, f func(t *testing.T)) { synctest.Test(t, f) }
