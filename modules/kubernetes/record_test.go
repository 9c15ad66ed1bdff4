package kubelease

import (
	"encoding/json"
	"errors"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// TestLeaseName: DNS-1123 labels are used as they are, except those that
// start with the hashed prefix; everything else is hashed to a valid,
// prefixed label.
func TestLeaseName(t *testing.T) {
	for election, want := range map[string]string{
		"billing":               "billing",
		"a-1":                   "a-1",
		"fxe-x":                 "",
		"Billing":               "",
		"jobs/sync":             "",
		"a.b":                   "",
		strings.Repeat("a", 63): strings.Repeat("a", 63),
		strings.Repeat("a", 64): "",
		"ünïcode":               "",
	} {
		got := LeaseName(election)
		if want != "" && got != want {
			t.Errorf("LeaseName(%q) = %q, want %q", election, got, want)
		}
		if want == "" && (!strings.HasPrefix(got, hashedPrefix) || len(got) != len(hashedPrefix)+40) {
			t.Errorf("LeaseName(%q) = %q, want the hashed form", election, got)
		}
		if problems := validation.IsDNS1123Label(got); len(problems) > 0 {
			t.Errorf("LeaseName(%q) = %q is not a DNS-1123 label: %v", election, got, problems)
		}
	}
	if LeaseName("fxe-x") == LeaseName("fxe-y") {
		t.Error("two hashed names collide")
	}
}

func ptr[T any](v T) *T { return &v }

// TestDecode: the spec decides the holder; fxelection's record gives the
// term; a client-go holder gets the record's term plus one; hostile
// content is ErrInvalidRecord.
func TestDecode(t *testing.T) {
	rec := fxelection.Lease{Election: "e", Holder: "a", Incarnation: "i1", Term: 7, Duration: 3 * time.Second}
	v, err := backendkit.MarshalValue(rec, false)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(holder *string, ann string, secs *int32) *coordv1.Lease {
		o := &coordv1.Lease{Spec: coordv1.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: secs,
			RenewTime: &metav1.MicroTime{Time: time.Unix(100, 0)}}}
		if ann != "" {
			o.Annotations = map[string]string{AnnotationRecord: ann}
		}
		return o
	}
	s, err := decode(obj(ptr("a"), string(v), ptr(int32(3))), "e")
	if err != nil || s.Released || s.Lease.Term != 7 || s.Lease.Incarnation != "i1" {
		t.Fatalf("own record: %+v, %v", s, err)
	}
	s, err = decode(obj(ptr("client-go-b"), string(v), ptr(int32(15))), "e")
	if err != nil || s.Lease.Holder != "client-go-b" || s.Lease.Term != 8 || s.Lease.Duration != 15*time.Second {
		t.Fatalf("client-go holder: %+v, %v", s, err)
	}
	s, err = decode(obj(ptr(""), string(v), ptr(int32(1))), "e")
	if err != nil || !s.Released || s.Lease.Term != 7 {
		t.Fatalf("released by client-go: %+v, %v", s, err)
	}
	s, err = decode(obj(nil, "", nil), "e")
	if err != nil || !s.Released {
		t.Fatalf("empty Lease: %+v, %v", s, err)
	}
	for name, o := range map[string]*coordv1.Lease{
		"garbage annotation":      obj(ptr("a"), "{", ptr(int32(3))),
		"record of another":       obj(ptr("a"), string(v), ptr(int32(3))),
		"client-go no duration":   obj(ptr("b"), "", nil),
		"client-go zero duration": obj(ptr("b"), "", ptr(int32(0))),
		"holder not printable":    obj(ptr("b\x00"), "", ptr(int32(3))),
	} {
		election := "e"
		if name == "record of another" {
			election = "other"
		}
		if _, err := decode(o, election); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", name, err)
		}
	}
}

// FuzzDecode: no Lease object content makes decode panic, and whatever it
// accepts is a valid lease.
func FuzzDecode(f *testing.F) {
	v, _ := backendkit.MarshalValue(fxelection.Lease{Election: "e", Holder: "a", Term: 1, Duration: time.Second}, false)
	f.Add("a", string(v), int32(3))
	f.Add("", string(v), int32(1))
	f.Add("b", "", int32(15))
	f.Add("b", "{", int32(-1))
	f.Fuzz(func(t *testing.T, holder, ann string, secs int32) {
		o := &coordv1.Lease{Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs}}
		if ann != "" {
			o.Annotations = map[string]string{AnnotationRecord: ann}
		}
		s, err := decode(o, "e")
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("error not ErrInvalidRecord: %v", err)
			}
			return
		}
		if !s.Released {
			if err := s.Lease.Validate(); err != nil {
				t.Fatalf("accepted an invalid lease %+v: %v", s.Lease, err)
			}
		}
	})
}

// clientGoRecord is what a client-go follower compares between two reads
// of a Lease: its spec as resourcelock.LeaseLock.Get marshals it.
func clientGoRecord(t *testing.T, spec coordv1.LeaseSpec) string {
	t.Helper()
	raw, err := json.Marshal(resourcelock.LeaseSpecToLeaderElectionRecord(&spec))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestEveryWriteChangesClientGoRecord: a holder renewing many times a
// second (and once with its clock stepped back) never writes a record
// that client-go's follower reads as one it saw before, so the follower's
// observed time restarts at every renewal it sees; renewTime stays the
// holder's clock, never behind its previous write; acquireTime is never
// after the acquisition and moves back by less than a second per write.
func TestEveryWriteChangesClientGoRecord(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	l := fxelection.Lease{Election: "e", Holder: "a", Incarnation: "i", Term: 5, Duration: 3 * time.Second, AcquiredAt: base.Add(300 * time.Millisecond)}
	obj := &coordv1.Lease{}
	var s caslease.Record
	seen := map[string]int{}
	var clocks []time.Duration
	for i := range 40 {
		clocks = append(clocks, time.Duration(i)*70*time.Millisecond+300*time.Millisecond)
	}
	clocks = append(clocks, 1500*time.Millisecond, 1510*time.Millisecond) // the clock stepped back
	var prevRenew time.Time
	for i, c := range clocks {
		now := base.Add(c)
		err := apply(obj, l, false, now)
		if err != nil {
			t.Fatal(err)
		}
		rec := clientGoRecord(t, obj.Spec)
		if j, dup := seen[rec]; dup {
			t.Fatalf("write %d (at %v) reads as write %d to client-go: %s", i, c, j, rec)
		}
		seen[rec] = i
		renew, acq := obj.Spec.RenewTime.Time, obj.Spec.AcquireTime.Time
		if renew.Before(prevRenew) || renew.Before(now) && renew != prevRenew {
			t.Fatalf("write %d: renewTime %v, previous %v, clock %v", i, renew, prevRenew, now)
		}
		if acq.After(l.AcquiredAt) || l.AcquiredAt.Sub(acq) > time.Duration(i+1)*time.Second {
			t.Fatalf("write %d: acquireTime %v for an acquisition at %v", i, acq, l.AcquiredAt)
		}
		prevRenew = renew
		if s, err = decode(obj, "e"); err != nil {
			t.Fatal(err)
		}
		if got := s.Lease.AcquiredAt; !got.Equal(l.AcquiredAt) {
			t.Fatalf("write %d: fxelection's record says acquired %v, want %v", i, got, l.AcquiredAt)
		}
	}
	// Once a second has passed since the previous write, acquireTime is
	// the acquisition again.
	if err := apply(obj, l, false, prevRenew.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := obj.Spec.AcquireTime.Time; !got.Equal(l.AcquiredAt) {
		t.Fatalf("a write in a new second: acquireTime %v, want %v", got, l.AcquiredAt)
	}
}

// TestDecodeAny: a Lease the watch sees is decoded for the election its
// name belongs to: its own name when that is a direct Lease name (a
// client-go holder included), the election fxelection's record names when
// the name is hashed; a Lease of no election is ErrInvalidRecord.
func TestDecodeAny(t *testing.T) {
	const long = "jobs/sync" // hashed
	rec := func(election string) string {
		v, err := backendkit.MarshalValue(fxelection.Lease{Election: election, Holder: "a", Term: 4, Duration: time.Second}, false)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	obj := func(name, holder, ann string) *coordv1.Lease {
		o := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr(int32(2))}}
		if ann != "" {
			o.Annotations = map[string]string{AnnotationRecord: ann}
		}
		return o
	}
	for name, c := range map[string]struct {
		obj      *coordv1.Lease
		election string
		holder   string
	}{
		"client-go holder, no record": {obj("billing", "cg", ""), "billing", "cg"},
		"fxelection holder":           {obj("billing", "a", rec("billing")), "billing", "a"},
		"hashed name":                 {obj(LeaseName(long), "a", rec(long)), long, "a"},
		"hashed name, client-go":      {obj(LeaseName(long), "cg", rec(long)), long, "cg"},
	} {
		r, err := decodeAny(c.obj)
		if err != nil || r.Lease.Election != c.election || r.Lease.Holder != c.holder || r.Released {
			t.Errorf("%s: %+v, %v; want a live record of %q held by %q", name, r, err, c.election, c.holder)
		}
	}
	for name, o := range map[string]*coordv1.Lease{
		"hashed name, no record":        obj(LeaseName(long), "cg", ""),
		"hashed name, another's record": obj(LeaseName(long), "a", rec("other")),
		"direct name, another's record": obj("billing", "a", rec("other")),
		"direct name, garbage":          obj("billing", "a", "{"),
	} {
		if _, err := decodeAny(o); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", name, err)
		}
	}
}
