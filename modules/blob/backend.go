package bloblease

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// MetadataKey is the blob metadata name holding the encoded lease record
// (base64 of backendkit.MarshalRecord, or of a compact record when that
// would not fit Azure's 8 KiB of metadata; see the package doc).
const MetadataKey = "fxelection"

// Azure's limits on a finite blob lease.
const (
	// MinDuration is the shortest lease Azure grants.
	MinDuration = 15 * time.Second
	// MaxDuration is the longest finite lease Azure grants.
	MaxDuration = 60 * time.Second
)

const (
	// resolveBudget bounds how long Acquire and Get wait on a blob whose
	// state does not change (same ETag) while it stays unresolved: leased
	// under a record that names nobody holding the lease. Each change of
	// ETag (candidates racing, a record written) starts the budget again,
	// so contention under load is waited out (ctx bounds it) and is never
	// reported as an unknown holder.
	resolveBudget = 5 * time.Second
	pollMin       = 5 * time.Millisecond
	pollMax       = 100 * time.Millisecond
)

var (
	// ErrContainerRequired is returned by New when Options.Container is
	// empty.
	ErrContainerRequired = errors.New("bloblease: Options.Container is required")
	// ErrDuration is returned by Acquire when AcquireRequest.Duration,
	// rounded up to whole seconds, is outside Azure's 15s–60s lease range.
	// With this backend Config.LeaseDuration must be 15s–60s. Errors
	// matching it match backendkit.ErrDurationRange too.
	ErrDuration = errors.New("bloblease: lease Duration must be between 15s and 60s (Azure blob lease range)")
)

// Backend is the Azure Blob implementation of fxelection.Backend, on the
// service's native blob leases. It is safe for concurrent use and keeps no
// state between calls.
type Backend struct {
	// Redacting is the operations' one way out: Acquire, Renew, Release,
	// Get and Transfer call the unexported methods below and redact every
	// error (SDK network errors carry the request URL, and with a SAS its
	// sig=) with the known secrets (config module: account key, SAS).
	backendkit.Redacting

	client    *azblob.Client
	container string
	prefix    string
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
)

// New returns a Backend storing leases as blobs in opts.Container through
// client, which the caller owns. It validates opts with Options.Validate
// and does no I/O; the container must exist before first use.
func New(client *azblob.Client, opts Options) (*Backend, error) { return newBackend(client, opts) }

// newBackend is New, with secrets to redact from every error (the config
// module's account key and SAS).
func newBackend(client *azblob.Client, opts Options, secrets ...string) (*Backend, error) {
	if client == nil {
		return nil, errors.New("bloblease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	b := &Backend{client: client, container: opts.Container, prefix: prefix}
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: b.acquire, Renew: b.renew, Release: b.release, Get: b.get, Transfer: b.transfer,
	}, secrets...)
	return b, nil
}

// BackendName returns "blob".
func (b *Backend) BackendName() string { return "blob" }

// Container returns the container the backend uses.
func (b *Backend) Container() string { return b.container }

// BlobName returns the name of election's lease blob, for operators and
// tests: the prefix and the election escaped with url.PathEscape (a
// trailing dot, which Azure strips from names, is escaped as %2E).
func (b *Backend) BlobName(election string) string {
	name := url.PathEscape(election)
	if strings.HasSuffix(name, ".") {
		name = name[:len(name)-1] + "%2E"
	}
	return b.prefix + name
}

// LeaseID returns the Azure lease id a candidate with identity uses: a
// version-5-style UUID from the SHA-1 of "fxelection:"+identity. It is the
// same in every process, so a restarted holder can take its own lease back
// at once (with a higher term: a new incarnation). Azure cannot tell two
// processes with one lease id apart, so two live candidates must never
// share an identity: fencing keeps them apart, but they take the lease
// from each other in turn.
func LeaseID(identity string) string {
	sum := sha1.Sum([]byte("fxelection:" + identity))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// MinLeaseDuration returns MinDuration, the shortest lease Azure grants
// (backendkit.MinDurationer): a shorter AcquireRequest.Duration is refused
// with an error matching ErrDuration and backendkit.ErrDurationRange.
func (b *Backend) MinLeaseDuration() time.Duration { return MinDuration }

// durationSeconds maps d onto Azure's lease duration: whole seconds,
// rounded up, 15 to 60.
func durationSeconds(d time.Duration) (int32, error) {
	secs := (d + time.Second - 1) / time.Second
	if d <= 0 || secs < 15 || secs > 60 {
		return 0, fmt.Errorf("%w (%w): got %v", ErrDuration, backendkit.ErrDurationRange, d)
	}
	return int32(secs), nil
}

func (b *Backend) blobClient(election string) *blob.Client {
	return b.client.ServiceClient().NewContainerClient(b.container).NewBlobClient(b.BlobName(election))
}

// leaseVersion is the Lease.Version of a lease with Azure lease id id whose
// blob the holder last saw with ETag etag: "<lease id>;<ETag>", or the lease
// id alone when the ETag is unknown.
func leaseVersion(id string, etag azcore.ETag) string {
	if etag == "" {
		return id
	}
	return id + ";" + string(etag)
}

// splitVersion splits a Lease.Version into the Azure lease id and the ETag
// (empty when the Version is a lease id alone, as in a hand-built Lease or
// one from Get). A lease id never contains ';'.
func splitVersion(v string) (string, azcore.ETag) {
	id, etag, _ := strings.Cut(v, ";")
	return id, azcore.ETag(etag)
}

func leaseClient(bc *blob.Client, id string) (*lease.BlobClient, error) {
	return lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: &id})
}

// recordState classifies a blob's metadata.
type recordState int

const (
	recordNone    recordState = iota // no fxelection metadata (fresh blob)
	recordValid                      // a record of this election
	recordInvalid                    // something this package cannot decode
)

// snapshot is what one GetProperties returned.
type snapshot struct {
	leased bool // lease state leased or breaking
	state  recordState
	rec    fxelection.Lease
	recErr error // why the record is invalid
	etag   azcore.ETag
}

// metaValue looks name up case-insensitively: the SDK returns metadata
// names in HTTP header case ("Fxelection").
func metaValue(md map[string]*string, name string) (string, bool) {
	for k, v := range md {
		if strings.EqualFold(k, name) && v != nil {
			return *v, true
		}
	}
	return "", false
}

// decodeMeta decodes the record in a blob's metadata. No MetadataKey value
// gives recordNone. Anything but standard base64 of a compact record
// (decodeCompact) or of a valid UTF-8 record
// that backendkit.UnmarshalRecord accepts (holder and metadata printable
// UTF-8, term in [1, MaxTerm], duration in (0, MaxRecordDuration]) and that
// names election gives recordInvalid and an error matching
// backendkit.ErrInvalidRecord that quotes no stored value unescaped.
func decodeMeta(md map[string]*string, election string) (recordState, fxelection.Lease, error) {
	v, ok := metaValue(md, MetadataKey)
	if !ok {
		return recordNone, fxelection.Lease{}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return recordInvalid, fxelection.Lease{}, fmt.Errorf("%w: metadata %q is not base64", backendkit.ErrInvalidRecord, MetadataKey)
	}
	var l fxelection.Lease
	if len(raw) > 0 && raw[0] == compactFormat {
		l, err = decodeCompact(raw)
	} else {
		l, err = backendkit.UnmarshalRecord(raw)
	}
	if err != nil {
		return recordInvalid, fxelection.Lease{}, err
	}
	if l.Election != election {
		return recordInvalid, fxelection.Lease{}, fmt.Errorf("%w: record of election %q", backendkit.ErrInvalidRecord, l.Election)
	}
	return recordValid, l, nil
}

// encodeMeta is the metadata value for l: base64 of its JSON record, which
// every version of this package reads, or, when that is longer than
// maxMetaValue, base64 of its compact record (which always fits: see
// encodeCompact).
func encodeMeta(l fxelection.Lease) (string, error) {
	rec, err := backendkit.MarshalRecord(l)
	if err != nil {
		return "", err
	}
	if base64.StdEncoding.EncodedLen(len(rec)) <= maxMetaValue {
		return base64.StdEncoding.EncodeToString(rec), nil
	}
	v := base64.StdEncoding.EncodeToString(encodeCompact(l))
	if len(v) > maxMetaValue {
		// Not for anything Lease.Validate accepts.
		return "", fmt.Errorf("bloblease: Metadata: the lease record takes %d bytes of blob metadata, more than Azure's %d", len(v), maxMetaValue)
	}
	return v, nil
}

// props reads election's blob properties, conditioned on leaseID if it is
// not empty (then it fails unless that lease is the active one).
func (b *Backend) props(ctx context.Context, bc *blob.Client, election, leaseID string) (snapshot, error) {
	var opts *blob.GetPropertiesOptions
	if leaseID != "" {
		opts = &blob.GetPropertiesOptions{AccessConditions: &blob.AccessConditions{
			LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &leaseID},
		}}
	}
	p, err := bc.GetProperties(ctx, opts)
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{}
	if p.LeaseState != nil {
		st := string(*p.LeaseState)
		s.leased = st == string(lease.StateTypeLeased) || st == string(lease.StateTypeBreaking)
	}
	if p.ETag != nil {
		s.etag = *p.ETag
	}
	s.state, s.rec, s.recErr = decodeMeta(p.Metadata, election)
	return s, nil
}

// isLeaseMismatch reports whether err says the lease given is not the
// blob's active one (or there is none).
func isLeaseMismatch(err error) bool {
	return bloberror.HasCode(err,
		bloberror.LeaseIDMismatchWithBlobOperation, bloberror.LeaseNotPresentWithBlobOperation,
		bloberror.LeaseIDMismatchWithLeaseOperation, bloberror.LeaseNotPresentWithLeaseOperation,
		bloberror.LeaseIsBrokenAndCannotBeRenewed, bloberror.LeaseLost, bloberror.LeaseIDMissing,
		bloberror.LeaseIsBreakingAndCannotBeChanged)
}

// isLost reports whether err from a lease operation means the caller's
// lease is gone.
func isLost(err error) bool {
	var re *azcore.ResponseError
	return isLeaseMismatch(err) || bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ConditionNotMet) ||
		errors.As(err, &re) && (re.StatusCode == 409 || re.StatusCode == 412 || re.StatusCode == 404)
}

// poller paces the retries of one Acquire or Get.
type poller struct {
	deadline time.Time
	delay    time.Duration
	etag     azcore.ETag // last ETag seen
}

// seen notes the blob's ETag: a change is progress and restarts the budget.
func (p *poller) seen(etag azcore.ETag) {
	if etag != p.etag {
		p.etag = etag
		p.deadline = time.Now().Add(resolveBudget)
	}
}

func newPoller() *poller { return &poller{deadline: time.Now().Add(resolveBudget), delay: pollMin} }

// wait sleeps before the next attempt; it returns false when the budget is
// spent and ctx's error if ctx ends first.
func (p *poller) wait(ctx context.Context) (bool, error) {
	if time.Now().After(p.deadline) {
		return false, nil
	}
	t := time.NewTimer(p.delay)
	defer t.Stop()
	p.delay = min(2*p.delay, pollMax)
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return true, nil
	}
}

// errUnknownHolder is returned when the blob is leased but no valid record
// names the active lease's holder within resolveBudget. Acquire writes the
// record before it takes the lease, with If-Match on the ETag it read, so
// this is something other than fxelection leasing the blob (or a record
// replaced out of band while leased).
var errUnknownHolder = fmt.Errorf("%w: blob leased by a holder that wrote no record", backendkit.ErrInvalidRecord)

// resolveHeld returns the verified holder of a leased blob whose record
// names someone other than self, or retry=true when the blob changed
// meanwhile (the lease is free now, or another candidate's record and lease
// replaced the ones read).
func (b *Backend) resolveHeld(ctx context.Context, bc *blob.Client, election string, s snapshot) (fxelection.Lease, bool, error) {
	switch s.state {
	case recordInvalid:
		return fxelection.Lease{}, false, s.recErr
	case recordNone:
		return fxelection.Lease{}, true, nil
	}
	v, err := b.props(ctx, bc, election, LeaseID(s.rec.Holder))
	switch {
	case isLeaseMismatch(err) || bloberror.HasCode(err, bloberror.BlobNotFound):
		return fxelection.Lease{}, true, nil
	case err != nil:
		return fxelection.Lease{}, false, err
	case v.state == recordInvalid:
		return fxelection.Lease{}, false, v.recErr
	case v.state != recordValid || v.rec.Holder != s.rec.Holder:
		return fxelection.Lease{}, true, nil
	}
	v.rec.Version = LeaseID(v.rec.Holder)
	return v.rec, false, nil
}

// ensureBlob creates election's blob, empty, if it does not exist.
func (b *Backend) ensureBlob(ctx context.Context, election string) error {
	bb := b.client.ServiceClient().NewContainerClient(b.container).NewBlockBlobClient(b.BlobName(election))
	anyTag := azcore.ETagAny
	_, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &anyTag}},
	})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet, bloberror.LeaseIDMissing) {
		return fmt.Errorf("create blob: %w", err)
	}
	return nil
}

// acquire is Acquire (see backendkit.Redacting): takes req.Election's lease
// for req.Identity; see the package documentation for the exact steps and
// guarantees. req.Duration, rounded up to whole seconds, must be 15s–60s
// (else an error matching ErrDuration).
func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if req.Election == "" || req.Identity == "" {
		return fxelection.Lease{}, errors.New("acquire lease: empty election or identity")
	}
	// Azure's range first: it is the stricter rule, and its error names it.
	secs, err := durationSeconds(req.Duration)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	if err := req.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	bc := b.blobClient(req.Election)
	id := LeaseID(req.Identity)
	lc, err := leaseClient(bc, id)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	p := newPoller()
	for {
		l, retry, err := b.tryAcquire(ctx, bc, lc, req, secs, p)
		if !retry {
			if err != nil {
				return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
			}
			return l, nil
		}
		ok, err := p.wait(ctx)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		if !ok {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", errUnknownHolder)
		}
	}
}

// tryAcquire makes one read-decide-lease round; retry means the state
// changed under it and the round should be repeated.
func (b *Backend) tryAcquire(ctx context.Context, bc *blob.Client, lc *lease.BlobClient, req backendkit.AcquireRequest, secs int32, p *poller) (fxelection.Lease, bool, error) {
	s, err := b.props(ctx, bc, req.Election, "")
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		if err := b.ensureBlob(ctx, req.Election); err != nil {
			return fxelection.Lease{}, false, err
		}
		if s, err = b.props(ctx, bc, req.Election, ""); err != nil {
			return fxelection.Lease{}, false, err
		}
	} else if err != nil {
		return fxelection.Lease{}, false, err
	}
	p.seen(s.etag)
	mine := s.leased && s.state == recordValid && s.rec.Holder == req.Identity
	if s.leased && !mine {
		holder, retry, err := b.resolveHeld(ctx, bc, req.Election, s)
		if retry || err != nil {
			return fxelection.Lease{}, retry, err
		}
		return fxelection.Lease{}, false, &backendkit.HeldError{Holder: holder}
	}
	now := time.Now()
	id := *lc.LeaseID()
	next := fxelection.Lease{
		Election:    req.Election,
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    maps.Clone(req.Metadata),
		Version:     id,
		Duration:    req.Duration,
		AcquiredAt:  now,
	}
	continues := mine && req.Continues(s.rec)
	if continues {
		// The caller's own leadership (same identity and incarnation, or
		// a request naming no incarnation): a retry whose reply was lost.
		next.Term, next.AcquiredAt = s.rec.Term, s.rec.AcquiredAt
	} else {
		// A new leadership: a new holder, the same one after its lease
		// ended, or a new incarnation of the live holder (a restarted
		// process, which shares the Azure lease id). Above the stored
		// term, and clock-seeded so that it is above lost terms too when
		// no valid record survives (a new, deleted or foreign blob).
		var prev uint64
		if s.state == recordValid {
			prev = s.rec.Term
		}
		if next.Term, err = backendkit.NextTerm(prev, now); err != nil {
			return fxelection.Lease{}, false, err
		}
	}
	etag := s.etag
	if mine {
		// The identity's lease was live when read (the lease id is the
		// identity's): a new incarnation, or the same leadership retrying
		// an Acquire whose reply was lost. Renew that lease first,
		// conditioned on the ETag read: Azure refuses it once the lease was
		// released or taken since, and then Acquire decides again on the
		// blob as it is. Then write the record under the lease; the Azure
		// lease is acquired below (for the requested duration) on exactly
		// that version. Acquiring first would make a lease released
		// meanwhile active again under the record of the leadership that
		// released it. The write gives the blob a new ETag, which an
		// earlier acquisition's lease does not carry: its delayed Release
		// frees nothing. For a new incarnation it also gives the record the
		// higher term, so the predecessor's Renew (which compares holder
		// and term under the lease) fails with ErrLeaseLost from this write
		// on.
		if _, err := lc.RenewLease(ctx, &lease.BlobRenewOptions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
		}); err != nil {
			if isLost(err) {
				return fxelection.Lease{}, true, nil
			}
			return fxelection.Lease{}, false, err
		}
		if etag, err = b.writeRecord(ctx, bc, next, etag); err != nil {
			if isLost(err) {
				return fxelection.Lease{}, true, nil
			}
			return fxelection.Lease{}, false, err
		}
	}
	if !mine {
		// Free (available, expired, broken): write the new record first,
		// while nobody holds a lease, then lease exactly that version. So a
		// leased blob's record always names its leaseholder with its
		// current term: readers never see a new lease under the previous
		// holder's record.
		if etag, err = b.writeUnleased(ctx, bc, next, etag); err != nil {
			if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.LeaseIDMissing, bloberror.LeaseAlreadyPresent, bloberror.BlobNotFound) {
				return fxelection.Lease{}, true, nil // someone else was faster
			}
			return fxelection.Lease{}, false, err
		}
	}
	resp, err := lc.AcquireLease(ctx, secs, &lease.BlobAcquireOptions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
	})
	switch {
	case bloberror.HasCode(err, bloberror.LeaseAlreadyPresent, bloberror.ConditionNotMet, bloberror.BlobNotFound):
		return fxelection.Lease{}, true, nil // someone else was faster, or the record changed
	case err != nil:
		return fxelection.Lease{}, false, err
	}
	if resp.ETag != nil {
		etag = *resp.ETag
	}
	next.Version = leaseVersion(id, etag)
	if resp.Date != nil {
		next.ExpiresAt = resp.Date.Add(time.Duration(secs) * time.Second)
	}
	return next, false, nil
}

// writeUnleased stores l's record as the metadata of an unleased blob whose
// ETag is etag, and returns the new ETag.
func (b *Backend) writeUnleased(ctx context.Context, bc *blob.Client, l fxelection.Lease, etag azcore.ETag) (azcore.ETag, error) {
	v, err := encodeMeta(l)
	if err != nil {
		return "", err
	}
	resp, err := bc.SetMetadata(ctx, map[string]*string{MetadataKey: &v}, &blob.SetMetadataOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}},
	})
	if err != nil {
		return "", fmt.Errorf("write record: %w", err)
	}
	if resp.ETag == nil {
		return "", errors.New("write record: no ETag in the response")
	}
	return *resp.ETag, nil
}

// writeRecord stores l's record as the blob's metadata under l's lease,
// if the blob still has etag, and returns the new ETag.
func (b *Backend) writeRecord(ctx context.Context, bc *blob.Client, l fxelection.Lease, etag azcore.ETag) (azcore.ETag, error) {
	v, err := encodeMeta(l)
	if err != nil {
		return "", err
	}
	id, _ := splitVersion(l.Version)
	resp, err := bc.SetMetadata(ctx, map[string]*string{MetadataKey: &v}, &blob.SetMetadataOptions{
		AccessConditions: &blob.AccessConditions{
			LeaseAccessConditions:    &blob.LeaseAccessConditions{LeaseID: &id},
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
		},
	})
	if err != nil {
		return "", fmt.Errorf("write record: %w", err)
	}
	if resp.ETag == nil {
		return "", errors.New("write record: no ETag in the response")
	}
	return *resp.ETag, nil
}

// renew is Renew (see backendkit.Redacting): renews the Azure lease named by
// lease.Version and then checks, under that lease, that the blob's record
// still has lease's holder and term; otherwise it returns an error matching
// backendkit.ErrLeaseLost. The ETag in lease.Version is not compared; the
// returned lease carries the one that read returned, so that after a delayed
// Acquire of the holder's own incarnation (a retry whose reply was lost)
// rewrote the record, the holder's own Release still matches. A lease whose
// term a new incarnation of the identity superseded fails here with
// ErrLeaseLost, although the Azure lease (shared by the two) was renewed.
func (b *Backend) renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	id, _ := splitVersion(l.Version)
	if l.Election == "" || l.Holder == "" || id == "" {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	bc := b.blobClient(l.Election)
	lc, err := leaseClient(bc, id)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	resp, err := lc.RenewLease(ctx, nil)
	switch {
	case err != nil && ctx.Err() == nil && isLost(err):
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	s, err := b.props(ctx, bc, l.Election, id)
	switch {
	case err != nil && isLost(err):
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	case s.state != recordValid || s.rec.Holder != l.Holder || s.rec.Term != l.Term:
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	next := l.Clone()
	next.Version = leaseVersion(id, s.etag)
	next.ExpiresAt = time.Time{}
	if resp.Date != nil {
		secs, err := durationSeconds(l.Duration)
		if err == nil {
			next.ExpiresAt = resp.Date.Add(time.Duration(secs) * time.Second)
		}
	}
	return next, nil
}

// release is Release (see backendkit.Redacting): releases the Azure lease
// named by lease.Version if the blob's record still has lease's holder and
// term and the blob still has the ETag that lease.Version carries (the one
// Acquire or Renew last saw): the release is conditioned on that ETag
// (If-Match). A new incarnation of the identity (a restarted holder: same
// lease id) records a higher term, and a re-acquisition by the same
// incarnation (same lease id, same term) rewrites the record, so a delayed
// Release from either predecessor frees nothing. Releasing a lease that is
// no longer the caller's returns nil. The record stays, so the next holder's
// term is higher. A Lease whose Version is a lease id alone (built by hand,
// or from Get) is matched on the lease id, holder and term only, without
// that protection.
func (b *Backend) release(ctx context.Context, l fxelection.Lease) error {
	id, want := splitVersion(l.Version)
	if l.Election == "" || l.Holder == "" || id == "" {
		return nil
	}
	bc := b.blobClient(l.Election)
	s, err := b.props(ctx, bc, l.Election, id)
	switch {
	case err != nil && ctx.Err() == nil && isLost(err):
		return nil
	case err != nil:
		return fmt.Errorf("release lease: %w", err)
	case s.state != recordValid || s.rec.Holder != l.Holder || s.rec.Term != l.Term:
		return nil
	case want != "" && s.etag != want:
		return nil // a later acquisition of the same lease id: not ours to free
	}
	lc, err := leaseClient(bc, id)
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	etag := s.etag
	_, err = lc.ReleaseLease(ctx, &lease.BlobReleaseOptions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
	})
	switch {
	case err != nil && ctx.Err() == nil && isLost(err):
		return nil
	case err != nil:
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// transfer is Transfer (see backendkit.Redacting), implementing
// backendkit.Transferer. It matches lease as Release does (the Azure lease
// named by lease.Version is the blob's active one, the record has lease's
// holder and term, and the blob has the ETag lease.Version carries), then,
// under that Azure lease, writes the record Acquire would write for req on a
// free lease (held by req.Identity under req.Incarnation, with req.Metadata,
// acquired now, with the next clock-seeded term, so above every term the
// election had) and changes the Azure lease's id to req.Identity's (LeaseID)
// with Change Lease, conditioned on the ETag that write returned. The lease
// is never free in between: nobody else can write the blob or take its
// lease. Change Lease keeps the lease's duration, which is the one the
// leader acquired it for, not req.Duration (they are equal when the elector
// hands over: both are its LeaseDuration); Transfer then renews the lease
// under its new id so that the hint lasts that whole duration.
//
// Between the two writes, readers find a record naming req.Identity under
// an Azure lease of another id and wait for it to resolve (as Acquire and
// Get already wait on a record being replaced). If Change Lease fails,
// Transfer releases the leader's Azure lease: the blob is then free under
// the hint's record (its term kept, so the next holder's is higher), as
// after a release followed by the hint, and the error is returned. A req
// that fails Validate, is for another election or asks for a duration
// Azure cannot lease, and a lease that is no longer the caller's, change
// nothing: the last gives an error matching backendkit.ErrLeaseLost.
func (b *Backend) transfer(ctx context.Context, l fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	secs, err := durationSeconds(req.Duration)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	if err := req.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	id, want := splitVersion(l.Version)
	if req.Election != l.Election || l.Holder == "" || id == "" {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
	}
	bc := b.blobClient(l.Election)
	s, err := b.props(ctx, bc, l.Election, id)
	switch {
	case err != nil && ctx.Err() == nil && isLost(err):
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	case !s.leased || s.state != recordValid || s.rec.Holder != l.Holder || s.rec.Term != l.Term ||
		want != "" && s.etag != want:
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
	}
	now := time.Now()
	term, err := backendkit.NextTerm(s.rec.Term, now)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	newID := LeaseID(req.Identity)
	hint := fxelection.Lease{
		Election: req.Election, Holder: req.Identity, Incarnation: req.Incarnation,
		Metadata: maps.Clone(req.Metadata), Version: id, Duration: req.Duration,
		Term: term, AcquiredAt: now,
	}
	etag, err := b.writeRecord(ctx, bc, hint, s.etag)
	switch {
	case err != nil && ctx.Err() == nil && isLost(err):
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	lc, err := leaseClient(bc, id)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	if _, err := lc.ChangeLease(ctx, newID, &lease.BlobChangeOptions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
	}); err != nil {
		// Free the blob under the hint rather than leave it leased by
		// an id that no record names.
		// (lc keeps the old id when Change Lease fails.)
		_, _ = lc.ReleaseLease(context.WithoutCancel(ctx), &lease.BlobReleaseOptions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
		})
		return fxelection.Lease{}, fmt.Errorf("transfer lease: change lease: %w", err)
	}
	hint.Version = leaseVersion(newID, etag)
	// The hint's full duration from now: a renewal under the new id. Not
	// fatal if it fails: the lease then ends when the leader's would have.
	if resp, err := lc.RenewLease(ctx, &lease.BlobRenewOptions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag},
	}); err == nil && resp.Date != nil {
		hint.ExpiresAt = resp.Date.Add(time.Duration(secs) * time.Second)
	}
	return hint, nil
}

// get is Get (see backendkit.Redacting): returns the holder of election's
// active Azure lease, as named by the record written under it, or
// backendkit.ErrNoLease when the blob does not exist or its lease is not
// active (available, expired, broken). Version is the holder's lease id;
// ExpiresAt is zero (Azure does not report a lease's remaining time).
func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	bc := b.blobClient(election)
	p := newPoller()
	for {
		s, err := b.props(ctx, bc, election, "")
		switch {
		case bloberror.HasCode(err, bloberror.BlobNotFound):
			return fxelection.Lease{}, backendkit.ErrNoLease
		case err != nil:
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
		case !s.leased:
			return fxelection.Lease{}, backendkit.ErrNoLease
		}
		p.seen(s.etag)
		holder, retry, err := b.resolveHeld(ctx, bc, election, s)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
		}
		if !retry {
			return holder, nil
		}
		ok, err := p.wait(ctx)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
		}
		if !ok {
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", errUnknownHolder)
		}
	}
}
