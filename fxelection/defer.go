package fxelection

// Candidates that defer (Config.Candidacy.Defer): while Defer returns true, an
// attempt only looks at the record (attemptGate, modeLook) and never takes
// a free lease; it takes a record held by its own identity, which is how a
// hand-over (ResignTo) reaches it.

// deferPolicy is the gate of Config.Candidacy.Defer.
type deferPolicy struct{ deferring func() bool }

// beforeAttempt asks for a look while Defer says so. A Defer that panics
// does not defer.
func (d deferPolicy) beforeAttempt(*Elector) (mode attemptMode) {
	defer func() {
		if recover() != nil {
			mode = modeAcquire
		}
	}()
	if d.deferring() {
		return modeLook
	}
	return modeAcquire
}

// afterLook never lets a deferring candidate take a lease that is not its
// own.
func (deferPolicy) afterLook(*Elector, error) bool { return false }
