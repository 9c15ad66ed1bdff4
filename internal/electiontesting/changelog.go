package electiontesting

import (
	"strings"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/watch"
)

// ChangeLog records a Watcher's OnChange calls: pass its Add as
// WatcherConfig.OnChange. It is safe for concurrent use; the zero value is
// ready.
type ChangeLog struct {
	syncList[watch.LeaderInfo]
}

// Add records one OnChange call.
func (c *ChangeLog) Add(i watch.LeaderInfo) { c.add(i) }

// Leaders returns the leases of the recorded calls that reported a leader,
// in order.
func (c *ChangeLog) Leaders() []fxelection.Lease {
	var out []fxelection.Lease
	for _, i := range c.snapshot() {
		if i.HasLeader {
			out = append(out, i.Leader)
		}
	}
	return out
}

// Holders lists the recorded calls' holders separated by spaces, "-" for a
// call that reported no leader (e.g. "- a - b").
func (c *ChangeLog) Holders() string {
	var s []string
	for _, i := range c.snapshot() {
		if i.HasLeader {
			s = append(s, i.Leader.Holder)
		} else {
			s = append(s, "-")
		}
	}
	return strings.Join(s, " ")
}
