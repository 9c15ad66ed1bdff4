// Package leaky is a fixture for NoUnexportedInDocs: its docs name
// unexported identifiers in every way the check must catch, and in every
// way it must let pass. Its code example declares its own:
//
//	detach := leaky.Attach()
//	defer detach()
package leaky

// Exported calls helperFunc and renews through renew() and c.release.
func Exported() { helperFunc(); renew(); (&conn{}).release() }

// Attach returns a function; the words renew and release are English here,
// and so is [helper] not: it is a doc link.
func Attach() (detach func()) { return func() {} }

// Thing is documented; its fields too.
type Thing struct {
	// Size is in `unit`s.
	Size   int
	hidden int // maxRetries must not leak (unexported field: not shown)
}

// Method of Thing uses `conn`.
func (Thing) Method() {}

const (
	// Limit is maxRetries at most.
	Limit = maxRetries
	other = 1 // init is not a name one can refer to
)

var (
	_       = other
	hiddenV = 2 // not shown
)

// Iface has a method.
type Iface interface {
	// Do waits in detach(.
	Do()
}

func init()       {}
func helperFunc() {}
func helper()     {}
func renew()      {}
func unit()       {}
func detach()     {}

type conn struct{}

func (*conn) release() {}

const maxRetries = 3
