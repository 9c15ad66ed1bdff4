//go:build !linux

package chaos

import (
	"errors"
	"os/exec"
	"time"
)

// pausesSupported says this platform runs the pause workload: the runner
// needs one monotonic clock shared by processes, SIGSTOP and Pdeathsig.
const pausesSupported = false

var errNoPauses = errors.New("process pauses need Linux")

func mono() int64 { return time.Now().UnixNano() }

func childAttr(*exec.Cmd) {}

func freeze(int) error { return errNoPauses }
func thaw(int) error   { return errNoPauses }
