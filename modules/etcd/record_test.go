package etcdlease

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// validKey is a record as a continuation leaves it: stated term 45 on a
// key created at 42 and last written at 50.
func validKey(t testing.TB) storedKey {
	v, err := encodeRecord(fxelection.Lease{
		Holder: "web-1", Incarnation: "0123abcd", Metadata: map[string]string{"addr": "10.0.0.1:8080"},
		Duration: 15 * time.Second, Term: 45,
	})
	if err != nil {
		t.Fatal(err)
	}
	return storedKey{Value: []byte(v), CreateRevision: 42, ModRevision: 50, Lease: 0x694d8f1c2a3b}
}

func TestDecodeRecord(t *testing.T) {
	l, err := decodeRecord("e", validKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if l.Holder != "web-1" || l.Incarnation != "0123abcd" || l.Term != 45 || l.Duration != 15*time.Second ||
		l.Metadata["addr"] != "10.0.0.1:8080" || l.Version != "694d8f1c2a3b" || l.Election != "e" {
		t.Fatalf("decoded %+v", l)
	}
	if id, ok := parseLeaseID(l.Version); !ok || id != 0x694d8f1c2a3b {
		t.Fatalf("parseLeaseID(%q) = %x, %v", l.Version, id, ok)
	}
}

// TestDecodeRecordTerms: a value without a term (the write that started
// the leadership) has the key's mod revision as its term; a value stating
// one has that term.
func TestDecodeRecordTerms(t *testing.T) {
	fresh, err := encodeRecord(fxelection.Lease{Holder: "a", Incarnation: "i1", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		value       string
		create, mod int64
		term        uint64
		inc         string
	}{
		"new leadership":          {fresh, 42, 50, 50, "i1"},
		"new key":                 {fresh, 42, 42, 42, "i1"},
		"stated term at creation": {`{"fxelection":2,"holder":"a","duration_ms":1000,"term":42}`, 42, 50, 42, ""},
	} {
		l, err := decodeRecord("e", storedKey{Value: []byte(c.value), CreateRevision: c.create, ModRevision: c.mod, Lease: 1})
		if err != nil || l.Term != c.term || l.Incarnation != c.inc || l.Holder != "a" {
			t.Errorf("%s: decoded %+v, %v; want term %d incarnation %q", name, l, err, c.term, c.inc)
		}
	}
}

// TestDecodeRecordHostile: every malformed value or etcd metadata gives
// ErrInvalidRecord, never a panic or a lease.
func TestDecodeRecordHostile(t *testing.T) {
	good := validKey(t)
	with := func(f func(*storedKey)) storedKey { k := good; f(&k); return k }
	val := func(s string) storedKey { return with(func(k *storedKey) { k.Value = []byte(s) }) }
	cases := map[string]storedKey{
		"zero create revision":  with(func(k *storedKey) { k.CreateRevision = 0 }),
		"negative revision":     with(func(k *storedKey) { k.CreateRevision = -5 }),
		"mod below create":      with(func(k *storedKey) { k.ModRevision = 41 }),
		"no etcd lease":         with(func(k *storedKey) { k.Lease = 0 }),
		"negative lease":        with(func(k *storedKey) { k.Lease = -1 }),
		"empty":                 val(""),
		"garbage":               val("\x00not a lease record"),
		"invalid UTF-8":         val("{\"fxelection\":2,\"holder\":\"\xff\",\"duration_ms\":1000}"),
		"unknown format":        val(`{"fxelection":3,"holder":"a","duration_ms":1000}`),
		"no format":             val(`{"holder":"a","duration_ms":1000}`),
		"unknown field":         val(`{"fxelection":2,"holder":"a","duration_ms":1000,"x":7}`),
		"format 1":              val(`{"fxelection":1,"holder":"a","duration_ms":1000}`),
		"zero term":             val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":0}`),
		"term below create":     val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":41}`),
		"term at mod revision":  val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":50}`),
		"term above mod":        val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":51}`),
		"negative term":         val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":-1}`),
		"fractional term":       val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":45.5}`),
		"term as string":        val(`{"fxelection":2,"holder":"a","duration_ms":1000,"term":"45"}`),
		"bad incarnation":       val(`{"fxelection":2,"holder":"a","incarnation":"a b","duration_ms":1000}`),
		"incarnation too long":  val(`{"fxelection":2,"holder":"a","incarnation":"` + strings.Repeat("i", backendkit.MaxIncarnationLen+1) + `","duration_ms":1000}`),
		"trailing data":         val(`{"fxelection":2,"holder":"a","duration_ms":1000} {}`),
		"zero duration":         val(`{"fxelection":2,"holder":"a","duration_ms":0}`),
		"negative duration":     val(`{"fxelection":2,"holder":"a","duration_ms":-1}`),
		"overflowing duration":  val(`{"fxelection":2,"holder":"a","duration_ms":9223372036854775807}`),
		"fractional duration":   val(`{"fxelection":2,"holder":"a","duration_ms":1.5}`),
		"empty holder":          val(`{"fxelection":2,"holder":"","duration_ms":1000}`),
		"holder with escape":    val(`{"fxelection":2,"holder":"a\u001b[31m","duration_ms":1000}`),
		"holder too long":       val(`{"fxelection":2,"holder":"` + strings.Repeat("h", backendkit.MaxIdentityLen+1) + `","duration_ms":1000}`),
		"metadata control char": val(`{"fxelection":2,"holder":"a","metadata":{"k":"v\n"},"duration_ms":1000}`),
		"metadata empty key":    val(`{"fxelection":2,"holder":"a","metadata":{"":"v"},"duration_ms":1000}`),
		"metadata too large":    val(`{"fxelection":2,"holder":"a","metadata":{"k":"` + strings.Repeat("v", backendkit.MaxMetadataBytes) + `"},"duration_ms":1000}`),
		"metadata not strings":  val(`{"fxelection":2,"holder":"a","metadata":{"k":1},"duration_ms":1000}`),
		"array":                 val(`[1,2,3]`),
		"huge value":            val(`{"fxelection":2,"holder":"a","duration_ms":1000,"x":"` + strings.Repeat("x", maxValueBytes) + `"}`),
	}
	for name, k := range cases {
		if l, err := decodeRecord("e", k); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: decoded %+v, %v; want ErrInvalidRecord", name, l, err)
		}
	}
}

// TestParseLeaseID: only canonical positive hexadecimal IDs are versions.
func TestParseLeaseID(t *testing.T) {
	for _, v := range []string{"", "0", "-1", "x", "0a", "A", " 1", "8000000000000000", "1 "} {
		if id, ok := parseLeaseID(v); ok {
			t.Errorf("parseLeaseID(%q) = %x, true", v, id)
		}
	}
	for _, id := range []int64{1, 0xa, 1<<63 - 1} {
		if got, ok := parseLeaseID(formatLeaseID(id)); !ok || got != id {
			t.Errorf("round trip of %x: %x, %v", id, got, ok)
		}
	}
}

// TestHostileKeysInEtcd: foreign values written to a real etcd are refused
// by Acquire and Get (ErrInvalidRecord), never taken over; Renew reports
// the lease lost and Release leaves the key alone.
func TestHostileKeysInEtcd(t *testing.T) {
	c := sharedCluster(t)
	admin := c.Client(t)
	b := newBackend(t, Options{}, c.Endpoints()...)
	g, err := admin.Grant(ctxT(t), 60)
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]string{
		"garbage":     "\x00\xff",
		"escape":      `{"fxelection":2,"holder":"a\u001b]0;pwned\u0007","duration_ms":1000}`,
		"format 1":    `{"fxelection":1,"holder":"a","duration_ms":1000}`,
		"future":      `{"fxelection":9,"holder":"a","duration_ms":1000}`,
		"long":        strings.Repeat("x", maxValueBytes+1),
		"no duration": `{"fxelection":2,"holder":"a"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := electiontesting.Election(t)
			if _, err := admin.Put(ctxT(t), b.Key(e), value, clientv3.WithLease(g.ID)); err != nil {
				t.Fatal(err)
			}
			req := backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute}
			if _, err := b.Acquire(ctxT(t), req); !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("Acquire: %v, want ErrInvalidRecord", err)
			}
			if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("Get: %v, want ErrInvalidRecord", err)
			}
			forged := fxelection.Lease{Election: e, Holder: "a", Term: 1, Version: formatLeaseID(int64(g.ID)), Duration: time.Minute}
			if _, err := b.Renew(ctxT(t), forged); !errors.Is(err, backendkit.ErrLeaseLost) {
				t.Fatalf("Renew: %v, want ErrLeaseLost", err)
			}
			if err := b.Release(ctxT(t), forged); err != nil {
				t.Fatalf("Release: %v", err)
			}
			resp, err := admin.Get(ctxT(t), b.Key(e))
			if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
				t.Fatalf("foreign key changed: %v, %v", resp, err)
			}
		})
	}
}

// FuzzDecodeRecord: whatever etcd returns, decodeRecord returns a lease
// that passes CheckLease or an error matching ErrInvalidRecord, and never
// panics; a decoded lease encodes back to the same record.
func FuzzDecodeRecord(f *testing.F) {
	good := validKey(f)
	f.Add(good.Value, good.CreateRevision, good.ModRevision, good.Lease)
	f.Add([]byte(`{"fxelection":2,"holder":"a","duration_ms":1}`), int64(1), int64(1), int64(1))
	f.Add([]byte(`{"fxelection":2,"holder":"a","metadata":{},"duration_ms":31536000000}`), int64(1<<62), int64(1<<63-1), int64(1<<63-1))
	f.Add([]byte(`{"fxelection":1,"holder":"a","duration_ms":1}`), int64(1), int64(1), int64(1))
	f.Add([]byte("\x00garbage"), int64(0), int64(-1), int64(0))
	f.Add([]byte(`{"fxelection":1,"holder":"a\u0000","duration_ms":5} `), int64(3), int64(2), int64(7))
	f.Add([]byte(`{"fxelection":2,"holder":"a","incarnation":"x-1","duration_ms":5,"term":3}`), int64(3), int64(4), int64(7))
	f.Add([]byte(`{"fxelection":2,"holder":"a","duration_ms":5}`), int64(3), int64(9), int64(7))
	f.Fuzz(func(t *testing.T, value []byte, create, mod, lease int64) {
		l, err := decodeRecord("e", storedKey{Value: value, CreateRevision: create, ModRevision: mod, Lease: lease})
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("error %v does not match ErrInvalidRecord", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("decoded lease fails CheckLease: %v", err)
		}
		if l.Term < uint64(create) || l.Term > uint64(mod) || l.Version != formatLeaseID(lease) {
			t.Fatalf("term %d version %q from create %d mod %d lease %d", l.Term, l.Version, create, mod, lease)
		}
		// Re-encoded as a continuation writes it (term stated, at a later
		// revision), and as a new leadership does (no term).
		for _, c := range []struct {
			term     uint64
			mod      int64
			wantTerm uint64
		}{{l.Term, int64(l.Term) + 1, l.Term}, {0, mod, uint64(mod)}} {
			if c.mod <= 0 {
				continue // the stated term is the largest revision
			}
			again, err := encodeRecord(fxelection.Lease{Holder: l.Holder, Incarnation: l.Incarnation, Metadata: l.Metadata, Duration: l.Duration, Term: c.term})
			if err != nil {
				t.Fatal(err)
			}
			l2, err := decodeRecord("e", storedKey{Value: []byte(again), CreateRevision: create, ModRevision: c.mod, Lease: lease})
			if err != nil || l2.Holder != l.Holder || l2.Incarnation != l.Incarnation || l2.Duration != l.Duration ||
				len(l2.Metadata) != len(l.Metadata) || l2.Term != c.wantTerm {
				t.Fatalf("re-encoded record (term %d) decodes to %+v, %v; want %+v with term %d", c.term, l2, err, l, c.wantTerm)
			}
		}
	})
}
