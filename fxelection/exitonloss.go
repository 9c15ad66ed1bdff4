package fxelection

import (
	"sync/atomic"

	"go.uber.org/fx"
)

// Exit on loss (Config.ExitOnLoss): an fx app whose elector stops leading
// for any other reason than Stop shuts down with exit code 1, for
// platforms that restart a process rather than let it campaign again. It
// answers at the step-down (EventStoppedLeading), as an observer: the
// shutdown is asked for there (Shutdown does not block) and logged at
// Warn. Hook installs it; stopping is set once the app's stop has begun.

// exitOnLoss makes e shut the app down through sd when it stops leading,
// unless by Stop or once stopping is set.
func exitOnLoss(e *Elector, sd fx.Shutdowner, stopping *atomic.Bool) {
	e.AddObserver(ObserverFunc(func(ev Event) {
		if ev.Kind != EventStoppedLeading || ev.Reason == ReasonStopped || stopping.Load() {
			return
		}
		e.log.Warn("leadership ended: shutting the app down (ExitOnLoss)", "reason", string(ev.Reason))
		if err := sd.Shutdown(fx.ExitCode(1)); err != nil {
			e.log.Warn("ExitOnLoss: shutdown", "error", err.Error())
		}
	}))
}
