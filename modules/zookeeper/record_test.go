package zklease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

const testNode = "lease-0000000007"

func TestRecordRoundTrip(t *testing.T) {
	in := fxelection.Lease{
		Election: "billing/eu", Holder: "web-1", Incarnation: "9f2c41d07ab3e655",
		Metadata: map[string]string{"addr": "10.0.0.1:8080", "<&>": "ü"},
		Duration: 1500*time.Millisecond + 1, Term: 42,
	}
	for _, stated := range []bool{false, true} {
		data, err := encodeRecord(in, stated)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(in.Election, storedNode{Name: testNode, Data: data, Czxid: 100, Mzxid: 120})
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(100)
		if stated {
			want = 42
		}
		if got.Term != want || got.Holder != in.Holder || got.Incarnation != in.Incarnation ||
			got.Metadata["<&>"] != "ü" || got.Duration != 1501*time.Millisecond {
			t.Fatalf("stated=%v: got %+v", stated, got)
		}
	}
}

func TestDecodeRefusesForeign(t *testing.T) {
	good, err := encodeRecord(fxelection.Lease{Election: "e", Holder: "a", Duration: time.Second}, false)
	if err != nil {
		t.Fatal(err)
	}
	stated, err := encodeRecord(fxelection.Lease{Election: "e", Holder: "a", Duration: time.Second, Term: 500}, true)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]storedNode{
		"garbage":          {Name: testNode, Data: []byte("\x00not a record"), Czxid: 1, Mzxid: 1},
		"not utf-8":        {Name: testNode, Data: []byte("{\"holder\":\"\xff\"}"), Czxid: 1, Mzxid: 1},
		"empty":            {Name: testNode, Czxid: 1, Mzxid: 1},
		"bad name":         {Name: "lease-1", Data: good, Czxid: 1, Mzxid: 1},
		"bad name digits":  {Name: "lease-00000000x7", Data: good, Czxid: 1, Mzxid: 1},
		"zero czxid":       {Name: testNode, Data: good, Czxid: 0, Mzxid: 1},
		"mzxid below":      {Name: testNode, Data: good, Czxid: 5, Mzxid: 4},
		"stated above":     {Name: testNode, Data: stated, Czxid: 499, Mzxid: 499},
		"other election":   {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"f","holder":"a","duration_ms":1000}`), Czxid: 1, Mzxid: 1},
		"unknown field":    {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","holder":"a","duration_ms":1000,"x":1}`), Czxid: 1, Mzxid: 1},
		"trailing":         {Name: testNode, Data: append(append([]byte{}, good...), []byte(` {}`)...), Czxid: 1, Mzxid: 1},
		"format 2":         {Name: testNode, Data: []byte(`{"fxelection_zk":2,"election":"e","holder":"a","duration_ms":1000}`), Czxid: 1, Mzxid: 1},
		"zero duration":    {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","holder":"a","duration_ms":0}`), Czxid: 1, Mzxid: 1},
		"huge duration":    {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","holder":"a","duration_ms":9223372036854775807}`), Czxid: 1, Mzxid: 1},
		"no holder":        {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","duration_ms":1000}`), Czxid: 1, Mzxid: 1},
		"control holder":   {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","holder":"a\u001b[31m","duration_ms":1000}`), Czxid: 1, Mzxid: 1},
		"bad incarnation":  {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","holder":"a","incarnation":"a b","duration_ms":1000}`), Czxid: 1, Mzxid: 1},
		"too large":        {Name: testNode, Data: []byte(strings.Repeat(" ", maxRecordBytes+1)), Czxid: 1, Mzxid: 1},
		"negative term":    {Name: testNode, Data: []byte(`{"fxelection_zk":1,"election":"e","holder":"a","duration_ms":1000,"term":-1}`), Czxid: 1, Mzxid: 1},
		"array":            {Name: testNode, Data: []byte(`[1]`), Czxid: 1, Mzxid: 1},
		"null":             {Name: testNode, Data: []byte(`null`), Czxid: 1, Mzxid: 1},
		"czxid beyond max": {Name: testNode, Data: good, Czxid: -1, Mzxid: 1},
	}
	for name, n := range cases {
		if _, err := decodeRecord("e", n); !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", name, err)
		}
	}
	if _, err := decodeRecord("e", storedNode{Name: testNode, Data: good, Czxid: 1, Mzxid: 1}); err != nil {
		t.Fatalf("good record: %v", err)
	}
}

func TestVersionAndNames(t *testing.T) {
	v := formatVersion(testNode, 1234)
	if name, z, ok := parseVersion(v); !ok || name != testNode || z != 1234 {
		t.Fatalf("parseVersion(%q) = %q %d %v", v, name, z, ok)
	}
	for _, bad := range []string{"", "x", "lease-0000000007", "lease-0000000007@", "lease-0000000007@-1", "lease-0000000007@0", "lease-1@5", "../x@5"} {
		if _, _, ok := parseVersion(bad); ok {
			t.Errorf("parseVersion(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"billing": "billing", "a/b": "a%2Fb", ".": "%2E", "..": "%2E%2E", "é": "%C3%A9", "a b": "a%20b", "x_y-Z9": "x_y-Z9"} {
		if got := escapeName(in); got != want {
			t.Errorf("escapeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDecodeRecord: whatever a znode holds, decoding never panics, and
// either fails with ErrInvalidRecord or returns a lease that
// Lease.Validate accepts, of the election asked for, with a term in
// [1, Czxid], which encodes and decodes again to the same lease.
func FuzzDecodeRecord(f *testing.F) {
	good, _ := encodeRecord(fxelection.Lease{Election: "e", Holder: "a", Incarnation: "abc", Metadata: map[string]string{"k": "v"}, Duration: time.Second, Term: 3}, true)
	f.Add(testNode, good, int64(5), int64(6))
	f.Add(testNode, []byte(`{"fxelection_zk":1,"election":"e","holder":"a","duration_ms":1}`), int64(1), int64(1))
	f.Add("lease-x", []byte("\x00"), int64(0), int64(-1))
	f.Add(testNode, []byte(`{"fxelection_zk":1,"election":"e","holder":"a","duration_ms":1000,"term":18446744073709551615}`), int64(9223372036854775807), int64(9223372036854775807))
	f.Fuzz(func(t *testing.T, name string, data []byte, czxid, mzxid int64) {
		l, err := decodeRecord("e", storedNode{Name: name, Data: data, Czxid: czxid, Mzxid: mzxid})
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("error %v does not match ErrInvalidRecord", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("decoded lease invalid: %v", err)
		}
		if l.Election != "e" || l.Term == 0 || l.Term > uint64(czxid) {
			t.Fatalf("decoded %+v from czxid %d", l, czxid)
		}
		again, err := encodeRecord(l, true)
		if err != nil {
			t.Fatal(err)
		}
		l2, err := decodeRecord("e", storedNode{Name: name, Data: again, Czxid: czxid, Mzxid: mzxid})
		if err != nil || l2.Term != l.Term || l2.Holder != l.Holder || l2.Duration != l.Duration || l2.Incarnation != l.Incarnation {
			t.Fatalf("round trip: %+v, %v; want %+v", l2, err, l)
		}
	})
}
