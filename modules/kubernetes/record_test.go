package kubelease

import (
	"errors"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
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
	if err != nil || s.cur.Released || s.cur.Lease.Term != 7 || s.cur.Lease.Incarnation != "i1" {
		t.Fatalf("own record: %+v, %v", s, err)
	}
	s, err = decode(obj(ptr("client-go-b"), string(v), ptr(int32(15))), "e")
	if err != nil || s.cur.Lease.Holder != "client-go-b" || s.cur.Lease.Term != 8 || s.cur.Lease.Duration != 15*time.Second {
		t.Fatalf("client-go holder: %+v, %v", s, err)
	}
	s, err = decode(obj(ptr(""), string(v), ptr(int32(1))), "e")
	if err != nil || !s.cur.Released || s.cur.Lease.Term != 7 {
		t.Fatalf("released by client-go: %+v, %v", s, err)
	}
	s, err = decode(obj(nil, "", nil), "e")
	if err != nil || !s.cur.Released {
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
		if !s.cur.Released {
			if err := s.cur.Lease.Validate(); err != nil {
				t.Fatalf("accepted an invalid lease %+v: %v", s.cur.Lease, err)
			}
		}
	})
}
