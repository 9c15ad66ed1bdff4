package ddblease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// acquireAttempts is how many read-decide-write rounds Acquire makes when
// its conditional writes keep losing races.
const acquireAttempts = 4

// maxVersion is the largest version an item may carry: the next write's
// version, one more, still fits an int64.
const maxVersion = backendkit.MaxTerm - 1

// Backend is the DynamoDB implementation of fxelection.Backend. It is safe
// for concurrent use. Each Backend has its own expiry tracker: the
// observations that allow a takeover belong to the candidate (process)
// that made them.
type Backend struct {
	client  *dynamodb.Client
	opts    Options
	tracker backendkit.ExpiryTracker
	secrets []string // known secrets (config module: the secret access key, the session token)

	ensureMu sync.Mutex  // one table creation at a time
	ensured  atomic.Bool // the table was found or created

	held backendkit.HeldRecords // an item deleted from outside (see Acquire)
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
)

// New returns a Backend storing leases in opts.Table through client, which
// the caller owns. It validates opts with Options.Validate and does no
// I/O; unless opts.SkipCreateTable, the first operation creates the table
// if it is missing.
func New(client *dynamodb.Client, opts Options) (*Backend, error) {
	if client == nil {
		return nil, errors.New("ddblease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Backend{client: client, opts: opts}, nil
}

// BackendName returns "dynamodb".
func (b *Backend) BackendName() string { return "dynamodb" }

// Table returns the table the backend uses.
func (b *Backend) Table() string { return b.opts.Table }

// stored is an item as read: the decoded value (its Lease.Version is the
// version in decimal), the version as a number and the value attribute's
// exact text, which a conditional write compares with the version so that
// it replaces exactly the write that was read.
type stored struct {
	backendkit.Value
	version uint64
	raw     string
}

// decodeItem validates an item read for election. Anything but a string
// key naming election, a string ValueAttribute that
// backendkit.UnmarshalValue accepts (a valid value around a valid record of
// election) and a number VersionAttribute in decimal in [1, maxVersion]
// gives an error matching backendkit.ErrInvalidRecord that quotes no stored
// value. Other attributes (an operator's TTL attribute, say) are ignored.
func decodeItem(item map[string]types.AttributeValue, election string) (stored, error) {
	if k, ok := item[KeyAttribute].(*types.AttributeValueMemberS); !ok || k.Value != election {
		return stored{}, fmt.Errorf("%w: item key is not the election's name", backendkit.ErrInvalidRecord)
	}
	v, ok := item[ValueAttribute].(*types.AttributeValueMemberS)
	if !ok {
		return stored{}, fmt.Errorf("%w: no string attribute %q", backendkit.ErrInvalidRecord, ValueAttribute)
	}
	n, ok := item[VersionAttribute].(*types.AttributeValueMemberN)
	if !ok {
		return stored{}, fmt.Errorf("%w: no number attribute %q", backendkit.ErrInvalidRecord, VersionAttribute)
	}
	version, ok := parseVersion(n.Value)
	if !ok {
		return stored{}, fmt.Errorf("%w: attribute %q is not an integer in [1, %d]", backendkit.ErrInvalidRecord, VersionAttribute, uint64(maxVersion))
	}
	val, err := backendkit.UnmarshalValue([]byte(v.Value), election)
	if err != nil {
		return stored{}, err
	}
	val.Lease.Version = strconv.FormatUint(version, 10)
	return stored{Value: val, version: version, raw: v.Value}, nil
}

// parseVersion accepts a canonical decimal integer in [1, maxVersion] (no
// sign, no leading zero, no exponent: what this package writes).
func parseVersion(s string) (uint64, bool) {
	if s == "" || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v <= maxVersion
}

// nextVersion is the version of the write after prev (0: none): the larger
// of prev+1 and now in microseconds, so that an item deleted and written
// again does not repeat the versions it had.
func nextVersion(prev uint64, now time.Time) uint64 {
	next := prev + 1
	if us := now.UnixMicro(); us > 0 && uint64(us) > next && uint64(us) <= maxVersion {
		next = uint64(us)
	}
	return next
}

// isConflict reports whether err means a conditional write lost.
func isConflict(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// storeErr notes a missing table (so that the next operation creates it
// again, unless SkipCreateTable) and returns err.
func (b *Backend) storeErr(err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		b.ensured.Store(false)
	}
	return err
}

// ensureTable creates the table if it is missing (CreateTable), once per
// Backend and again after an operation found it missing; with
// SkipCreateTable it does nothing.
func (b *Backend) ensureTable(ctx context.Context) error {
	if b.opts.SkipCreateTable || b.ensured.Load() {
		return nil
	}
	b.ensureMu.Lock()
	defer b.ensureMu.Unlock()
	if b.ensured.Load() {
		return nil
	}
	if err := CreateTable(ctx, b.client, b.opts.Table); err != nil {
		return err
	}
	b.ensured.Store(true)
	return nil
}

// key returns election's item key.
func key(election string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: election}}
}

// read returns election's item; found is false if there is none. It is
// one strongly consistent GetItem. A record read is noted in b.held.
func (b *Backend) read(ctx context.Context, election string) (s stored, found bool, err error) {
	s, found, err = b.readItem(ctx, election)
	if err == nil && found {
		b.held.Saw(election, s.Value)
	}
	if err != nil || !found && !b.held.Vanished(election) {
		// No observation spans a gap: a failed read, or a missing item
		// that was not held when last read, starts the watch of the next
		// write (or of the absence) afresh.
		b.tracker.Forget(election)
	}
	return s, found, err
}

func (b *Backend) readItem(ctx context.Context, election string) (stored, bool, error) {
	if err := b.ensureTable(ctx); err != nil {
		return stored{}, false, err
	}
	out, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(b.opts.Table),
		Key:            key(election),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return stored{}, false, b.storeErr(err)
	}
	if len(out.Item) == 0 {
		return stored{}, false, nil
	}
	s, err := decodeItem(out.Item, election)
	return s, true, err
}

// write stores l (released or not) conditionally: with prev nil only if
// the item does not exist, else only if the item is still the write prev
// read (the same version and value text). It returns the new version.
func (b *Backend) write(ctx context.Context, l fxelection.Lease, released bool, prev *stored) (string, error) {
	val, err := backendkit.MarshalValue(l, released)
	if err != nil {
		return "", err
	}
	var prevVersion uint64
	in := &dynamodb.PutItemInput{TableName: aws.String(b.opts.Table)}
	if prev == nil {
		in.ConditionExpression = aws.String("attribute_not_exists(#k)")
		in.ExpressionAttributeNames = map[string]string{"#k": KeyAttribute}
	} else {
		prevVersion = prev.version
		in.ConditionExpression = aws.String("#v = :v AND #l = :l")
		in.ExpressionAttributeNames = map[string]string{"#v": VersionAttribute, "#l": ValueAttribute}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":v": &types.AttributeValueMemberN{Value: strconv.FormatUint(prev.version, 10)},
			":l": &types.AttributeValueMemberS{Value: prev.raw},
		}
	}
	version := strconv.FormatUint(nextVersion(prevVersion, time.Now()), 10)
	in.Item = map[string]types.AttributeValue{
		KeyAttribute:     &types.AttributeValueMemberS{Value: l.Election},
		ValueAttribute:   &types.AttributeValueMemberS{Value: string(val)},
		VersionAttribute: &types.AttributeValueMemberN{Value: version},
	}
	if _, err := b.client.PutItem(ctx, in); err != nil {
		return "", b.storeErr(err)
	}
	return version, nil
}

// Acquire takes req.Election's lease for req.Identity if the item is
// absent, released, held by req.Identity, or observed unchanged by this
// Backend for the record's full Duration; an item this Backend last read
// held and now finds missing (deleted from outside) counts as that record
// until the absence has been observed for its full Duration. See the
// package documentation.
// backendkit.Claim decides; a new holder's term comes from
// backendkit.NextTerm (clock-seeded); at backendkit.MaxTerm Acquire fails
// with an error matching backendkit.ErrTermExhausted and writes nothing.
func (b *Backend) Acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	l, err := b.acquire(ctx, req)
	return l, b.redact(err)
}

func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := req.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	for range acquireAttempts {
		cur, found, err := b.read(ctx, req.Election)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		decide, present := cur.Value, found
		expired := func() bool {
			return b.tracker.Expired(req.Election, cur.Lease.Version, cur.Write, cur.Lease.Duration)
		}
		if !found {
			// An item read held and now missing was deleted from outside.
			decide, present, expired = b.held.Absent(&b.tracker, req.Election, req.Identity)
		}
		next, err := backendkit.Claim(req, decide, present, expired, time.Now())
		if err != nil {
			var held *backendkit.HeldError
			if errors.As(err, &held) {
				return fxelection.Lease{}, err
			}
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		var prev *stored
		if found {
			prev = &cur
		}
		version, err := b.write(ctx, next, false, prev)
		if err != nil {
			if isConflict(err) {
				continue // someone wrote first: read again
			}
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		b.tracker.Forget(req.Election)
		b.held.Forget(req.Election)
		next.Version = version
		next.Metadata = maps.Clone(req.Metadata)
		return next, nil
	}
	return fxelection.Lease{}, fmt.Errorf("acquire lease: lost %d conditional-write races in a row", acquireAttempts)
}

// Renew rewrites lease's record (same term) if the item still holds it
// unchanged since the caller's last write; otherwise it returns an error
// matching backendkit.ErrLeaseLost. The new Version is the new item
// version.
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
	next.Incarnation = cur.Lease.Incarnation
	next.ExpiresAt = time.Time{}
	version, err := b.write(ctx, next, false, &cur)
	if err != nil {
		if isConflict(err) {
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
		}
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	next.Version = version
	return next, nil
}

// own reads lease's item and returns it if it still holds lease: same
// version, holder and term, not released. Otherwise it returns an error
// matching backendkit.ErrLeaseLost (or a store failure).
func (b *Backend) own(ctx context.Context, lease fxelection.Lease) (stored, error) {
	cur, err := b.ownLeadership(ctx, lease)
	if err == nil && cur.Lease.Version != lease.Version {
		return stored{}, backendkit.ErrLeaseLost
	}
	return cur, err
}

// ownLeadership is own without the version: the item still holds lease's
// leadership (holder and term, not released), whichever write of it. A
// renewal its caller gave up on (Stop cut it short) may still have been
// stored: Release must end the leadership all the same, or the next holder
// waits for it to expire.
func (b *Backend) ownLeadership(ctx context.Context, lease fxelection.Lease) (stored, error) {
	if lease.Version == "" || lease.Election == "" {
		return stored{}, backendkit.ErrLeaseLost
	}
	cur, found, err := b.read(ctx, lease.Election)
	switch {
	case errors.Is(err, backendkit.ErrInvalidRecord):
		return stored{}, fmt.Errorf("%w: %w", backendkit.ErrLeaseLost, err)
	case err != nil:
		return stored{}, err
	case !found || cur.Released || cur.Lease.Holder != lease.Holder || cur.Lease.Term != lease.Term:
		return stored{}, backendkit.ErrLeaseLost
	}
	return cur, nil
}

// Release marks lease's item released (keeping its term) if it still holds
// lease's leadership (holder and term; a later write of the same
// leadership too), with a write conditional on the item just read (read
// again after a lost condition); releasing a lease that is no longer the
// caller's returns nil.
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
		if _, err := b.write(ctx, cur.Lease, true, &cur); err != nil {
			if isConflict(err) {
				continue // written since the read: read again
			}
			return fmt.Errorf("release lease: %w", err)
		}
		b.held.Forget(lease.Election)
		return nil
	}
	return fmt.Errorf("release lease: lost %d conditional-write races in a row", acquireAttempts)
}

// Transfer implements backendkit.Transferer: it ends lease, matched as
// Renew matches it (same version, holder and term, not released), and
// in the same write replaces it with the record Acquire would write for
// req on a free lease: held by req.Identity under req.Incarnation, with
// req.Metadata, for req.Duration, acquired now, with the next clock-seeded
// term (backendkit.Claim on the item as if released), so strictly above
// every term the election had. That write is one PutItem conditional on
// the item read, so the lease is never free in between and nothing written
// since the read is overwritten.
//
// A req that fails AcquireRequest.Validate or is for another election,
// and a lease that is no longer the caller's (taken over, released,
// renewed by another run, deleted) or that changes between the read and
// the write, change nothing: the first gives an error, the others one
// matching backendkit.ErrLeaseLost. DynamoDB has no notifications here:
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
	next, err := backendkit.ClaimTransfer(req, cur.Value, time.Now())
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	version, err := b.write(ctx, next, false, &cur)
	if err != nil {
		if isConflict(err) {
			return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", backendkit.ErrLeaseLost)
		}
		return fxelection.Lease{}, fmt.Errorf("transfer lease: %w", err)
	}
	b.tracker.Forget(req.Election)
	b.held.Forget(req.Election)
	next.Version = version
	next.Metadata = maps.Clone(req.Metadata)
	return next, nil
}

// Get returns election's current holder with Version set to the item's
// version and a zero ExpiresAt, or backendkit.ErrNoLease if the item is
// absent or released. It changes nothing in the store; like Acquire, it
// starts this Backend's observation of the write it saw.
func (b *Backend) Get(ctx context.Context, election string) (fxelection.Lease, error) {
	l, err := b.get(ctx, election)
	return l, b.redact(err)
}

func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	cur, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	if !found {
		if _, deleted, expired := b.held.Absent(&b.tracker, election, ""); deleted {
			expired() // starts the watch of the absence, as Acquire would
		}
	}
	if !found || cur.Released {
		return fxelection.Lease{}, backendkit.ErrNoLease
	}
	// A sighting is a sighting: it starts this candidate's observation of
	// the write as an Acquire would (the result does not matter here).
	b.tracker.Expired(election, cur.Lease.Version, cur.Write, cur.Lease.Duration)
	return cur.Lease, nil
}

// redact passes err through backendkit.RedactError with the backend's
// known secrets: every error that leaves the Backend goes through it.
func (b *Backend) redact(err error) error {
	return backendkit.RedactError(err, b.secrets...)
}
