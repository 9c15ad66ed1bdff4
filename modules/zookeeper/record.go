package zklease

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// recordFormat is the version of the lease znode's data written here.
const recordFormat = 1

// maxRecordBytes bounds a lease znode's data: anything larger is foreign
// and is rejected without being parsed.
const maxRecordBytes = 64 << 10

// leaseNodePrefix starts the name of every lease znode: ZooKeeper appends
// a 10-digit sequence number.
const leaseNodePrefix = "lease-"

// wireRecord is the JSON data of a lease znode.
type wireRecord struct {
	Format      int               `json:"fxelection_zk"`
	Election    string            `json:"election"`
	Holder      string            `json:"holder"`
	Incarnation string            `json:"incarnation,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	DurationMS  int64             `json:"duration_ms"`
	// Term is stated only by a write that continues a leadership begun on
	// an earlier znode; otherwise the term is the znode's creation zxid.
	Term uint64 `json:"term,omitempty"`
}

// encodeRecord encodes l's election, holder, incarnation, metadata and
// duration (whole milliseconds, rounded up), and its term when stated is
// true.
func encodeRecord(l fxelection.Lease, stated bool) ([]byte, error) {
	ms := l.Duration.Milliseconds()
	if l.Duration%time.Millisecond > 0 {
		ms++
	}
	w := wireRecord{
		Format:      recordFormat,
		Election:    l.Election,
		Holder:      l.Holder,
		Incarnation: l.Incarnation,
		Metadata:    l.Metadata,
		DurationMS:  ms,
	}
	if stated {
		w.Term = l.Term
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("encode lease record: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// storedNode is what decodeRecord needs of a znode: its name, data and the
// parts of its Stat the record's meaning depends on.
type storedNode struct {
	Name  string
	Data  []byte
	Czxid int64
	Mzxid int64
}

// decodeRecord decodes the lease znode n of election. The term is the
// stated one if the record states it (it must be in [1, Czxid]: a
// continued leadership began on an earlier znode), else the znode's
// creation zxid. Anything else — a name that is not lease-<10 digits>,
// data larger than 64 KiB, not UTF-8, not a JSON record of this format,
// unknown or trailing fields, another election's record, a duration out of
// range, a zxid that is not positive, a lease Lease.Validate refuses —
// gives an error matching backendkit.ErrInvalidRecord that quotes no
// stored bytes unescaped. Never a panic.
func decodeRecord(election string, n storedNode) (fxelection.Lease, error) {
	if !validNodeName(n.Name) {
		return fxelection.Lease{}, fmt.Errorf("%w: znode %q is not a lease znode", backendkit.ErrInvalidRecord, n.Name)
	}
	if len(n.Data) > maxRecordBytes {
		return fxelection.Lease{}, fmt.Errorf("%w: record larger than %d bytes", backendkit.ErrInvalidRecord, maxRecordBytes)
	}
	if !utf8.Valid(n.Data) {
		return fxelection.Lease{}, fmt.Errorf("%w: record is not valid UTF-8", backendkit.ErrInvalidRecord)
	}
	if n.Czxid <= 0 || n.Mzxid < n.Czxid {
		return fxelection.Lease{}, fmt.Errorf("%w: znode zxids %d/%d out of range", backendkit.ErrInvalidRecord, n.Czxid, n.Mzxid)
	}
	dec := json.NewDecoder(bytes.NewReader(n.Data))
	dec.DisallowUnknownFields()
	var w wireRecord
	if err := dec.Decode(&w); err != nil {
		return fxelection.Lease{}, fmt.Errorf("%w: not a JSON lease record", backendkit.ErrInvalidRecord)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fxelection.Lease{}, fmt.Errorf("%w: trailing data after the record", backendkit.ErrInvalidRecord)
	}
	if w.Format != recordFormat {
		return fxelection.Lease{}, fmt.Errorf("%w: unknown format %d", backendkit.ErrInvalidRecord, w.Format)
	}
	if w.Election != election {
		return fxelection.Lease{}, fmt.Errorf("%w: record of another election", backendkit.ErrInvalidRecord)
	}
	d, err := backendkit.DurationFromMillis(w.DurationMS)
	if err != nil {
		return fxelection.Lease{}, err
	}
	term := uint64(n.Czxid)
	if w.Term != 0 {
		if w.Term > term {
			return fxelection.Lease{}, fmt.Errorf("%w: stated term %d above the znode's creation zxid %d", backendkit.ErrInvalidRecord, w.Term, n.Czxid)
		}
		term = w.Term
	}
	l := fxelection.Lease{
		Election:    election,
		Holder:      w.Holder,
		Incarnation: w.Incarnation,
		Metadata:    w.Metadata,
		Term:        term,
		Duration:    d,
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	return l, nil
}

// validNodeName reports whether name is lease-<10 digits>, the name
// ZooKeeper gives a sequential znode created as leaseNodePrefix.
func validNodeName(name string) bool {
	digits, ok := strings.CutPrefix(name, leaseNodePrefix)
	if !ok || len(digits) != 10 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// formatVersion is a Lease.Version naming one lease znode: its name and
// creation zxid (the name alone repeats if the election's node is deleted
// and re-created).
func formatVersion(name string, czxid int64) string {
	return name + "@" + strconv.FormatInt(czxid, 10)
}

// parseVersion reverses formatVersion.
func parseVersion(v string) (name string, czxid int64, ok bool) {
	name, z, found := strings.Cut(v, "@")
	if !found || !validNodeName(name) {
		return "", 0, false
	}
	czxid, err := strconv.ParseInt(z, 10, 64)
	if err != nil || czxid <= 0 {
		return "", 0, false
	}
	return name, czxid, true
}

// escapeName turns an election name into one znode name: ASCII letters,
// digits, '-' and '_' stay, every other byte becomes %XX (so '/', '.',
// and non-ASCII text cannot make a path of several components, "." or
// "..", or a character ZooKeeper refuses).
func escapeName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
