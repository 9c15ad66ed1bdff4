package ddblease

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

const fuzzElection = "demo"

func fuzzValue(released bool, record string) string {
	return fmt.Sprintf(`{"fxelection_value":1,"released":%t,"write":"00","record":%s}`, released, record)
}

// fuzzItem builds an item the way a foreign writer might: kinds picks the
// type of each attribute (bit 0: the key is a number, bit 1: the value is
// a number, bit 2: the version is a string, bit 3: no version, bit 4:
// another key).
func fuzzItem(value, version string, kinds byte) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		KeyAttribute:     &types.AttributeValueMemberS{Value: fuzzElection},
		ValueAttribute:   &types.AttributeValueMemberS{Value: value},
		VersionAttribute: &types.AttributeValueMemberN{Value: version},
	}
	if kinds&1 != 0 {
		item[KeyAttribute] = &types.AttributeValueMemberN{Value: "1"}
	}
	if kinds&2 != 0 {
		item[ValueAttribute] = &types.AttributeValueMemberN{Value: value}
	}
	if kinds&4 != 0 {
		item[VersionAttribute] = &types.AttributeValueMemberS{Value: version}
	}
	if kinds&8 != 0 {
		delete(item, VersionAttribute)
	}
	if kinds&16 != 0 {
		item[KeyAttribute] = &types.AttributeValueMemberS{Value: "other"}
	}
	return item
}

// FuzzDecodeItem checks the item decoder, the boundary between a table
// anyone with write access may fill and the elector: it never panics;
// whatever it rejects matches ErrInvalidRecord; whatever it accepts is a
// lease Lease.Validate accepts, with printable UTF-8 text and a version in
// [1, maxVersion], and re-encodes (backendkit.MarshalValue) to a value that
// decodes to the same lease and released flag.
func FuzzDecodeItem(f *testing.F) {
	good := fxelection.Lease{Election: fuzzElection, Holder: "node-a", Metadata: map[string]string{"addr": "10.0.0.1:80"}, Term: 7, Duration: 15e9}
	for _, released := range []bool{false, true} {
		if v, err := backendkit.MarshalValue(good, released); err == nil {
			f.Add(string(v), "1", byte(0))
			f.Add(string(v), "1764000000000000", byte(0))
		}
	}
	for _, r := range electiontest.HostileRecords(fuzzElection) {
		f.Add(fuzzValue(false, r), "3", byte(0))
	}
	rec := electiontest.RawRecord(fuzzElection, "x", "5", "60000")
	for _, seed := range []struct {
		value, version string
		kinds          byte
	}{
		{fuzzValue(false, rec), "0", 0},
		{fuzzValue(false, rec), "-1", 0},
		{fuzzValue(false, rec), "01", 0},
		{fuzzValue(false, rec), "1e3", 0},
		{fuzzValue(false, rec), "1.5", 0},
		{fuzzValue(false, rec), "9223372036854775807", 0},
		{fuzzValue(false, rec), "99999999999999999999999999999999999999", 0},
		{fuzzValue(false, rec), "1", 1},
		{fuzzValue(false, rec), "1", 2},
		{fuzzValue(false, rec), "1", 4},
		{fuzzValue(false, rec), "1", 8},
		{fuzzValue(false, rec), "1", 16},
		{`{"fxelection_value":1,"released":false}`, "1", 0},
		{"not json", "1", 0},
		{"", "1", 0},
		{"\xff", "1", 0},
	} {
		f.Add(seed.value, seed.version, seed.kinds)
	}
	f.Fuzz(func(t *testing.T, value, version string, kinds byte) {
		s, err := decodeItem(fuzzItem(value, version, kinds), fuzzElection)
		if err != nil && !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Fatalf("error %v does not match ErrInvalidRecord", err)
		}
		if !electiontest.CheckDecoded(t, fuzzElection, s.Lease, err) {
			return
		}
		if s.version < 1 || s.version > maxVersion || s.Lease.Version != strconv.FormatUint(s.version, 10) {
			t.Fatalf("accepted version %d (%q)", s.version, s.Lease.Version)
		}
		again, err := backendkit.MarshalValue(s.Lease, s.Released)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", s.Lease, err)
		}
		s2, err := decodeItem(fuzzItem(string(again), s.Lease.Version, 0), fuzzElection)
		if err != nil {
			t.Fatalf("re-encoded value %s does not decode: %v", again, err)
		}
		if !electiontesting.SameRecord(s2.Lease, s.Lease) || s2.Released != s.Released || s2.version != s.version {
			t.Fatalf("round trip changed %+v (released %v) into %+v (released %v)", s.Lease, s.Released, s2.Lease, s2.Released)
		}
	})
}

// TestVersions: versions are canonical decimals in [1, maxVersion], and
// the next one is above both the last and the clock.
func TestVersions(t *testing.T) {
	for s, ok := range map[string]bool{"1": true, "9223372036854775806": true, "9223372036854775807": false,
		"0": false, "": false, "01": false, "+1": false, "1e3": false, "1.0": false, " 1": false} {
		if _, got := parseVersion(s); got != ok {
			t.Errorf("parseVersion(%q) ok = %v, want %v", s, got, ok)
		}
	}
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct{ prev, want uint64 }{
		{0, uint64(now.UnixMicro())},
		{5, uint64(now.UnixMicro())},
		{uint64(now.UnixMicro()) + 7, uint64(now.UnixMicro()) + 8},
		{maxVersion - 1, maxVersion},
	} {
		if got := nextVersion(c.prev, now); got != c.want {
			t.Errorf("nextVersion(%d) = %d, want %d", c.prev, got, c.want)
		}
	}
	if got := nextVersion(3, time.Time{}); got != 4 {
		t.Errorf("nextVersion(3) before the epoch = %d, want 4", got)
	}
}
