package fxelection

import (
	"fmt"
)

// Where a recovered panic happened: the values of PanicError.Where.
const (
	panicInObserver       = "Observer"
	panicInStartedLeading = "OnStartedLeading"
	panicInStoppedLeading = "OnStoppedLeading"
	panicInNewLeader      = "OnNewLeader"
	panicInErrorCallback  = "OnError"
)

// PanicError reports a panic the Elector recovered from an Observer or one
// of the Callbacks. The panic does not propagate: the elector's campaign
// loop and callback goroutine go on as if the call had returned. It is
// delivered to OnError (unless OnError itself panicked) and to observers as
// an EventPanic, and logged at error level with its stack; errors.As
// finds it.
type PanicError struct {
	// Election is the elector's Config.Name.
	Election string
	// Where is the panicking hook: "Observer", "OnStartedLeading",
	// "OnStoppedLeading", "OnNewLeader" or "OnError".
	Where string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack at the recovery.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("fxelection: %s panicked in election %q: %v", e.Where, e.Election, e.Value)
}
