package ddblease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// maxVersion is the largest version an item may carry: the next write's
// version, one more, still fits an int64.
const maxVersion = backendkit.MaxTerm - 1

// Backend is the DynamoDB implementation of fxelection.Backend (and
// backendkit.Transferer): the one lease algorithm over a compare-and-swap
// register (caslease) on the table's items, with observed-time expiry and
// the rule for an item deleted from outside (see the package
// documentation). It is safe for concurrent use. Each Backend has its own
// expiry tracker: the observations that allow a takeover belong to the
// candidate (process) that made them. Every error it returns passes
// through backendkit.RedactError once, with the config module's secrets.
type Backend struct {
	*caslease.Backend // no push wake-up: not a backendkit.Notifier
	table             string
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)
	_ caslease.Register       = (*items)(nil)
)

// New returns a Backend storing leases in opts.Table through client, which
// the caller owns. It validates opts with Options.Validate and does no
// I/O; unless opts.SkipCreateTable, the first operation creates the table
// if it is missing.
func New(client *dynamodb.Client, opts Options) (*Backend, error) {
	return newBackend(client, opts, nil)
}

// newBackend is New with the secrets removed from every error (the config
// module's credentials).
func newBackend(client *dynamodb.Client, opts Options, secrets []string) (*Backend, error) {
	if client == nil {
		return nil, errors.New("ddblease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cb, err := caslease.New(&items{client: client, opts: opts}, caslease.Options{
		Name:    "dynamodb",
		Key:     func(election string) string { return election },
		Secrets: secrets,
	})
	if err != nil {
		return nil, err
	}
	return &Backend{Backend: cb, table: opts.Table}, nil
}

// Table returns the table the backend uses.
func (b *Backend) Table() string { return b.table }

// items is the table as a caslease.Register: one item per election, its
// key the election's name, replaced only by PutItem conditional on the
// item read.
type items struct {
	client *dynamodb.Client
	opts   Options

	ensureMu sync.Mutex  // one table creation at a time
	ensured  atomic.Bool // the table was found or created
}

// Capabilities: observed time (DynamoDB's TTL deletes lazily, days late),
// and the package never deletes an item (KeepsRecords).
func (*items) Capabilities() caslease.Capabilities {
	return caslease.Capabilities{KeepsRecords: true}
}

// stored is an item as read: the decoded value (its Lease.Version is the
// version in decimal), the version as a number and the value attribute's
// exact text, which a conditional write compares with the version so that
// it replaces exactly the write that was read. It is the caslease.Entry's
// State.
type stored struct {
	backendkit.Value
	version uint64
	raw     string
}

// Get reads election's item with one strongly consistent GetItem.
func (r *items) Get(ctx context.Context, key, election string) (caslease.Entry, error) {
	if err := r.ensureTable(ctx); err != nil {
		return caslease.Entry{}, err
	}
	out, err := r.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.opts.Table),
		Key:            map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return caslease.Entry{}, r.storeErr(err)
	}
	if len(out.Item) == 0 {
		return caslease.Entry{}, caslease.ErrNotFound
	}
	s, err := decodeItem(out.Item, election)
	if err != nil {
		return caslease.Entry{}, err
	}
	return caslease.Entry{Record: s.Value, Version: s.Lease.Version, State: s}, nil
}

// Add creates key's item, conditional on attribute_not_exists.
func (r *items) Add(ctx context.Context, key string, rec caslease.Record, _ time.Duration) (string, error) {
	return r.put(ctx, key, rec, nil)
}

// CompareAndSwap replaces key's item, conditional on the version and the
// whole value text prev read.
func (r *items) CompareAndSwap(ctx context.Context, key string, prev caslease.Entry, rec caslease.Record, _ time.Duration) (string, error) {
	s, ok := prev.State.(stored)
	if !ok {
		return "", errors.New("compare-and-swap on an entry this register did not read")
	}
	return r.put(ctx, key, rec, &s)
}

// put stores rec (with a fresh write nonce) conditionally: with prev nil
// only if the item does not exist (else caslease.ErrExists), otherwise
// only if the item is still the write prev read (else caslease.ErrConflict).
// It returns the new version.
func (r *items) put(ctx context.Context, key string, rec caslease.Record, prev *stored) (string, error) {
	val, err := backendkit.MarshalValue(rec.Lease, rec.Released)
	if err != nil {
		return "", err
	}
	var prevVersion uint64
	in := &dynamodb.PutItemInput{TableName: aws.String(r.opts.Table)}
	lost := caslease.ErrExists
	if prev == nil {
		in.ConditionExpression = aws.String("attribute_not_exists(#k)")
		in.ExpressionAttributeNames = map[string]string{"#k": KeyAttribute}
	} else {
		prevVersion, lost = prev.version, caslease.ErrConflict
		in.ConditionExpression = aws.String("#v = :v AND #l = :l")
		in.ExpressionAttributeNames = map[string]string{"#v": VersionAttribute, "#l": ValueAttribute}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":v": &types.AttributeValueMemberN{Value: strconv.FormatUint(prev.version, 10)},
			":l": &types.AttributeValueMemberS{Value: prev.raw},
		}
	}
	version := strconv.FormatUint(nextVersion(prevVersion, time.Now()), 10)
	in.Item = map[string]types.AttributeValue{
		KeyAttribute:     &types.AttributeValueMemberS{Value: key},
		ValueAttribute:   &types.AttributeValueMemberS{Value: string(val)},
		VersionAttribute: &types.AttributeValueMemberN{Value: version},
	}
	if _, err := r.client.PutItem(ctx, in); err != nil {
		var cf *types.ConditionalCheckFailedException
		if errors.As(err, &cf) {
			return "", lost
		}
		return "", r.storeErr(err)
	}
	return version, nil
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
