package bloblease

// DefaultPrefix is the blob name prefix used when Options.Prefix is empty.
const DefaultPrefix = "fxelection/"

// Options configures a Backend. The zero value is not usable: Container is
// required.
type Options struct {
	// Container holds the lease blobs. It must exist: creating it is the
	// application's job. Required.
	Container string
	// Prefix is prepended to every blob name.
	// Default: "fxelection/".
	Prefix string
}

// Validate checks opts without I/O: Container is required
// (ErrContainerRequired). New and the fxelection.backends.blob module both
// call it.
func (o Options) Validate() error {
	if o.Container == "" {
		return ErrContainerRequired
	}
	return nil
}
