package s3lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// maxBody bounds how much of an object is read: a lease record is small,
// anything larger is foreign.
const maxBody = backendkit.MaxValueBytes

// acquireAttempts is how many read-decide-write rounds Acquire makes when
// its conditional writes keep losing races.
const acquireAttempts = 4

// Backend is the S3 implementation of fxelection.Backend. It is safe for
// concurrent use. Each Backend has its own expiry tracker: the observations
// that allow a takeover belong to the candidate (process) that made them.
type Backend struct {
	client  *minio.Client
	bucket  string
	prefix  string
	tracker backendkit.ExpiryTracker
	secrets []string // known secrets (config module: the secret key), removed from every error
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
)

// New returns a Backend storing leases in opts.Bucket through client, which
// the caller owns. It validates opts with Options.Validate and does no I/O;
// the bucket must exist before first use.
func New(client *minio.Client, opts Options) (*Backend, error) {
	if client == nil {
		return nil, errors.New("s3lease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Backend{client: client, bucket: opts.Bucket, prefix: prefix}, nil
}

// BackendName returns "s3".
func (b *Backend) BackendName() string { return "s3" }

// Bucket returns the bucket the backend uses.
func (b *Backend) Bucket() string { return b.bucket }

// Key returns the object key of election's lease, for operators and tests.
func (b *Backend) Key(election string) string {
	return b.prefix + url.PathEscape(election) + ".json"
}

// encode returns the body for l: backendkit.MarshalValue, whose per-write
// nonce makes every write change the ETag.
func encode(l fxelection.Lease, released bool) ([]byte, error) {
	return backendkit.MarshalValue(l, released)
}

// decode parses an object body with backendkit.UnmarshalValue. Anything but
// a valid value around a valid record of election gives an error matching
// backendkit.ErrInvalidRecord: a body that is not valid UTF-8 JSON, an
// unknown format, a record that backendkit.UnmarshalRecord rejects (holder
// or metadata not printable UTF-8, term outside [1, MaxTerm], duration not
// in (0, MaxRecordDuration], acquired_at that cannot be encoded again), or
// a record naming another election. Error messages quote no stored value
// unescaped.
func decode(body []byte, election string) (backendkit.Value, error) {
	return backendkit.UnmarshalValue(body, election)
}

// s3Code returns the S3 error code and HTTP status of err, if it is an S3
// error response.
func s3Code(err error) (string, int) {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.Code, er.StatusCode
	}
	return "", 0
}

// isNotFound reports whether err means the object does not exist.
func isNotFound(err error) bool {
	code, status := s3Code(err)
	return code == minio.NoSuchKey || status == http.StatusNotFound && code != minio.NoSuchBucket
}

// isConflict reports whether err means a conditional write lost: its
// precondition failed (412), a concurrent conditional write won (409
// ConditionalRequestConflict on AWS), or the object it expected is gone.
func isConflict(err error) bool {
	code, status := s3Code(err)
	return status == http.StatusPreconditionFailed || status == http.StatusConflict ||
		code == minio.PreconditionFailed || code == minio.NoSuchKey
}

// read returns election's object; found is false if there is none. It
// makes one GET request (minio.Core), so the ETag and the body belong
// together.
func (b *Backend) read(ctx context.Context, election string) (s backendkit.Value, found bool, err error) {
	s, found, err = b.readObject(ctx, election)
	if err != nil || !found {
		// No observation spans a gap: a missing object or a failed read
		// starts the watch of the next write afresh.
		b.tracker.Forget(election)
	}
	return s, found, err
}

func (b *Backend) readObject(ctx context.Context, election string) (s backendkit.Value, found bool, err error) {
	body, info, _, err := minio.Core{Client: b.client}.GetObject(ctx, b.bucket, b.Key(election), minio.GetObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return backendkit.Value{}, false, nil
		}
		return backendkit.Value{}, false, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxBody+1))
	if err != nil {
		return backendkit.Value{}, false, err
	}
	if len(data) > maxBody {
		return backendkit.Value{}, true, fmt.Errorf("%w: object larger than %d bytes", backendkit.ErrInvalidRecord, maxBody)
	}
	s, err = decode(data, election)
	if err != nil {
		return backendkit.Value{}, true, err
	}
	if info.ETag == "" {
		return backendkit.Value{}, true, errors.New("object has no ETag")
	}
	s.Lease.Version = info.ETag
	return s, true, nil
}

// write stores l (released or not) conditionally: if etag is empty only if
// the object does not exist, else only if its ETag is etag. It returns the
// new ETag.
func (b *Backend) write(ctx context.Context, l fxelection.Lease, released bool, etag string) (string, error) {
	body, err := encode(l, released)
	if err != nil {
		return "", err
	}
	opts := minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true}
	if etag == "" {
		opts.SetMatchETagExcept("*")
	} else {
		opts.SetMatchETag(etag)
	}
	info, err := b.client.PutObject(ctx, b.bucket, b.Key(l.Election), bytes.NewReader(body), int64(len(body)), opts)
	if err != nil {
		return "", err
	}
	if info.ETag == "" {
		return "", errors.New("write returned no ETag")
	}
	return info.ETag, nil
}

// Acquire takes req.Election's lease for req.Identity if the object is
// absent, released, held by req.Identity, or observed unchanged by this
// Backend for the record's full Duration; see the package documentation.
// A new holder's term comes from backendkit.NextTerm (clock-seeded); at
// backendkit.MaxTerm Acquire fails with an error matching
// backendkit.ErrTermExhausted and writes nothing.
func (b *Backend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.acquire(ctx, req)
	return l, b.redact(err)
}

func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if req.Election == "" || req.Identity == "" {
		return fxelection.Lease{}, errors.New("acquire lease: empty election or identity")
	}
	for range acquireAttempts {
		cur, found, err := b.read(ctx, req.Election)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		var etag string
		if found {
			etag = cur.Lease.Version
		}
		next, err := backendkit.Claim(req, cur, found, func() bool {
			return b.tracker.Expired(req.Election, cur.Lease.Version, cur.Write, cur.Lease.Duration)
		}, time.Now())
		if err != nil {
			var held *backendkit.HeldError
			if errors.As(err, &held) {
				return fxelection.Lease{}, err
			}
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		version, err := b.write(ctx, next, false, etag)
		if err != nil {
			if isConflict(err) {
				continue // someone wrote first: read again
			}
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		b.tracker.Forget(req.Election)
		next.Version = version
		next.Metadata = cloneMeta(req.Metadata)
		return next, nil
	}
	return fxelection.Lease{}, fmt.Errorf("acquire lease: lost %d conditional-write races in a row", acquireAttempts)
}

// Renew rewrites lease's record (same term) if the object still holds it
// unchanged since the caller's last write; otherwise it returns an error
// matching backendkit.ErrLeaseLost. The new Version is the new ETag.
func (b *Backend) Renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	l, err := b.renew(ctx, lease)
	return l, b.redact(err)
}

func (b *Backend) renew(ctx context.Context, lease fxelection.Lease) (fxelection.Lease, error) {
	cur, err := b.own(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	next := lease.Clone()
	next.AcquiredAt = cur.Lease.AcquiredAt
	next.ExpiresAt = time.Time{}
	version, err := b.write(ctx, next, false, cur.Lease.Version)
	if err != nil {
		if isConflict(err) {
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
		}
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	next.Version = version
	return next, nil
}

// own reads lease's object and returns it if it still holds lease: same
// ETag, holder and term, not released. Otherwise it returns an error
// matching backendkit.ErrLeaseLost (or a store failure).
func (b *Backend) own(ctx context.Context, lease fxelection.Lease) (backendkit.Value, error) {
	cur, err := b.ownLeadership(ctx, lease)
	if err == nil && cur.Lease.Version != lease.Version {
		return backendkit.Value{}, backendkit.ErrLeaseLost
	}
	return cur, err
}

// ownLeadership is own without the ETag: the object still holds lease's
// leadership (holder and term, not released), whichever write of it. A
// renewal its caller gave up on (Stop cut it short) may still have been
// stored: Release must end the leadership all the same, or the next holder
// waits for it to expire. Any other write (another holder, a new
// incarnation's term, a release) fails the match.
func (b *Backend) ownLeadership(ctx context.Context, lease fxelection.Lease) (backendkit.Value, error) {
	if lease.Version == "" || lease.Election == "" {
		return backendkit.Value{}, backendkit.ErrLeaseLost
	}
	cur, found, err := b.read(ctx, lease.Election)
	switch {
	case errors.Is(err, backendkit.ErrInvalidRecord):
		return backendkit.Value{}, fmt.Errorf("%w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return backendkit.Value{}, err
	case !found || cur.Released || cur.Lease.Holder != lease.Holder || cur.Lease.Term != lease.Term:
		return backendkit.Value{}, backendkit.ErrLeaseLost
	}
	return cur, nil
}

// Release marks lease's object released (keeping its term) if it still
// holds lease's leadership (holder and term; a later write of the same
// leadership too), with a write conditional on the ETag just read;
// releasing a lease that is no longer the caller's returns nil.
func (b *Backend) Release(ctx context.Context, lease fxelection.Lease) error {
	return b.redact(b.release(ctx, lease))
}

func (b *Backend) release(ctx context.Context, lease fxelection.Lease) error {
	for range acquireAttempts {
		cur, err := b.ownLeadership(ctx, lease)
		if errors.Is(err, backendkit.ErrLeaseLost) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
		if _, err := b.write(ctx, cur.Lease, true, cur.Lease.Version); err != nil {
			if isConflict(err) {
				continue // written since the read: read again
			}
			return fmt.Errorf("release lease: %w", err)
		}
		return nil
	}
	return fmt.Errorf("release lease: lost %d conditional-write races in a row", acquireAttempts)
}

// Transfer implements backendkit.Transferer: it ends lease, matched as
// Renew matches it (same ETag, holder and term, not released), and in
// the same write replaces it with the record Acquire would write for req
// on a free lease: held by req.Identity under req.Incarnation, with
// req.Metadata, for req.Duration, acquired now, with the next
// clock-seeded term (backendkit.NextTerm of the lease's), so strictly
// above every term the election had. That write is one PUT conditional
// on the ETag just read (If-Match), so the lease is never free in between
// and nothing written since the read is overwritten.
//
// A req that fails AcquireRequest.Validate or is for another election,
// and a lease that is no longer the caller's (taken over, released,
// renewed by another run, deleted) or that changes between the read and
// the write, change nothing: the first gives an error, the others one
// matching backendkit.ErrLeaseLost. S3 has no notifications here:
// followers learn of the new holder at their next retry.
func (b *Backend) Transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.transfer(ctx, lease, req)
	return l, b.redact(err)
}

func (b *Backend) transfer(ctx context.Context, lease fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := backendkit.CheckTransfer(lease, req); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	cur, err := b.own(ctx, lease)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	next, err := backendkit.ClaimTransfer(req, cur, time.Now())
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	version, err := b.write(ctx, next, false, cur.Lease.Version)
	if err != nil {
		if isConflict(err) {
			return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
		}
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	b.tracker.Forget(req.Election)
	next.Version = version
	next.Metadata = cloneMeta(req.Metadata)
	return next, nil
}

// Get returns election's current holder with Version set to the object's
// ETag and a zero ExpiresAt, or backendkit.ErrNoLease if the object is
// absent or released. It changes nothing in the store; like Acquire, it
// starts this Backend's observation of the version it saw.
func (b *Backend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	l, err := b.get(ctx, election)
	return l, b.redact(err)
}

func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	cur, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	if !found || cur.Released {
		return fxelection.Lease{}, backendkit.ErrNoLease
	}
	// A sighting is a sighting: it starts this candidate's observation of
	// the version as an Acquire would (the result does not matter here).
	b.tracker.Expired(election, cur.Lease.Version, cur.Write, cur.Lease.Duration)
	return cur.Lease, nil
}

// redact passes err through backendkit.RedactError with the backend's
// known secrets: every error that leaves the Backend goes through it.
func (b *Backend) redact(err error) error {
	return backendkit.RedactError(err, b.secrets...)
}

func cloneMeta(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
