package kubelease

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// AnnotationRecord is the annotation that carries fxelection's own record
// of a Lease: holder, incarnation, term, metadata, duration and the
// per-write nonce (backendkit.MarshalValue). The spec fields are written as
// client-go's LeaseLock writes them, for its electors on the same Lease.
const AnnotationRecord = "fxelection.io/record"

// hashedPrefix starts the Lease name of an election whose name is not a
// DNS-1123 label; direct names never start with it.
const hashedPrefix = "fxe-"

// LeaseName returns the name of election's Lease object: the election's
// name itself when it is a valid DNS-1123 label (at most 63 lower-case
// letters, digits and '-', starting and ending with a letter or digit)
// that does not start with "fxe-"; otherwise "fxe-" followed by the first
// 40 hex digits (160 bits) of the SHA-256 of the name. The two sets of
// names cannot meet, and two names that need hashing collide only if
// SHA-256 does. A client-go elector shares an fxelection election by
// using the election's name as its Lease name, so give such elections
// DNS-1123 label names.
func LeaseName(election string) string {
	if len(validation.IsDNS1123Label(election)) == 0 && !strings.HasPrefix(election, hashedPrefix) {
		return election
	}
	sum := sha256.Sum256([]byte(election))
	return hashedPrefix + hex.EncodeToString(sum[:20])
}

// decode reads obj for election. The spec is authoritative for who holds
// the Lease (client-go electors write only the spec):
//
//   - no holder (client-go's release writes an empty one): released, with
//     the term of fxelection's record if there is one;
//   - the holder fxelection's record names: that record;
//   - another holder (a client-go elector, which keeps the annotations it
//     found): that holder, with the record's term plus one, for
//     spec.leaseDurationSeconds.
//
// Hostile content — fxelection's annotation unreadable or for another
// election, a holder that is not printable UTF-8, a duration out of range —
// gives an error matching backendkit.ErrInvalidRecord, never a panic.
func decode(obj *coordv1.Lease, election string) (caslease.Record, error) {
	holder := ""
	if obj.Spec.HolderIdentity != nil {
		holder = *obj.Spec.HolderIdentity
	}
	var rec caslease.Record
	raw, has := obj.Annotations[AnnotationRecord]
	if has {
		v, err := backendkit.UnmarshalValue([]byte(raw), election)
		if err != nil {
			return caslease.Record{}, fmt.Errorf("annotation %s: %w", AnnotationRecord, err)
		}
		rec = v
	}
	switch {
	case holder == "":
		if !has {
			rec.Lease = fxelection.Lease{Election: election}
		}
		rec.Released = true
		return rec, nil
	case has && !rec.Released && rec.Lease.Holder == holder:
		return rec, nil
	}
	l := fxelection.Lease{Election: election, Holder: holder, Term: min(rec.Lease.Term+1, backendkit.MaxTerm)}
	if obj.Spec.LeaseDurationSeconds == nil || *obj.Spec.LeaseDurationSeconds <= 0 ||
		time.Duration(*obj.Spec.LeaseDurationSeconds)*time.Second > backendkit.MaxRecordDuration {
		return caslease.Record{}, fmt.Errorf("%w: spec.leaseDurationSeconds missing or out of range", backendkit.ErrInvalidRecord)
	}
	l.Duration = time.Duration(*obj.Spec.LeaseDurationSeconds) * time.Second
	if obj.Spec.AcquireTime != nil {
		l.AcquiredAt = obj.Spec.AcquireTime.Time
	}
	if err := l.Validate(); err != nil {
		return caslease.Record{}, fmt.Errorf("spec of a holder fxelection did not write: %w", err)
	}
	// client-go renews by moving renewTime: each renewal is a new write to
	// observe.
	renew := ""
	if obj.Spec.RenewTime != nil {
		renew = obj.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return caslease.Record{Lease: l, Write: "spec:" + holder + "@" + renew}, nil
}

// durationSeconds is d in whole seconds, rounded up, as
// spec.leaseDurationSeconds holds it (at least 1).
func durationSeconds(d time.Duration) int32 {
	secs := (d + time.Second - 1) / time.Second
	return int32(max(1, min(secs, 1<<31-1)))
}

// apply writes l into obj, the Lease as read (or a new one), as
// client-go's LeaseLock would write its record, and fxelection's record
// (with a fresh write nonce) into the annotation. released writes
// client-go's release (empty holder, a duration of one second). The
// transitions count rises when the holder changes, as client-go's does.
// The times are those of distinctTimes: client-go sees every write as a
// change.
func apply(obj *coordv1.Lease, l fxelection.Lease, released bool, now time.Time) error {
	v, err := backendkit.MarshalValue(l, released)
	if err != nil {
		return err
	}
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[AnnotationRecord] = string(v)
	holder, secs, acquiredAt := l.Holder, durationSeconds(l.Duration), l.AcquiredAt
	if released {
		holder, secs, acquiredAt = "", 1, now
	}
	var transitions int32
	if obj.Spec.LeaseTransitions != nil {
		transitions = *obj.Spec.LeaseTransitions
	}
	if holder != "" && (obj.Spec.HolderIdentity == nil || holder != *obj.Spec.HolderIdentity) && transitions < 1<<31-1 {
		transitions++
	}
	acquired, renewed := distinctTimes(obj.Spec, holder, secs, transitions, acquiredAt, now)
	obj.Spec.HolderIdentity = &holder
	obj.Spec.LeaseDurationSeconds = &secs
	obj.Spec.AcquireTime = &acquired
	obj.Spec.RenewTime = &renewed
	obj.Spec.LeaseTransitions = &transitions
	return nil
}

// distinctTimes returns the acquireTime and renewTime of a write of
// holder, secs and transitions over prev, the spec read, so that client-go
// sees the write as a change. A client-go follower compares the Lease's
// spec as resourcelock.LeaderElectionRecord marshals it, with both times
// in whole seconds, and restarts its observed time only when that record
// changes: writes within one second that differ only in their
// microseconds look to it like one, its observed time starts at the first
// of them, and it would take over before the holder's last renewal
// expired. So:
//
//   - renewTime is now, and a holder's renewTime never goes back (a
//     write of the same holder keeps prev's renewTime if now is earlier);
//   - a write that client-go would otherwise read as prev (same holder,
//     duration, transitions and renewTime second) moves acquireTime one
//     second before prev's.
//
// Within one renewTime second a holder's writes thus count acquireTime
// down from its acquisition, one second per write, and no two of them
// compare equal; in the next second acquireTime is the acquisition again.
// renewTime stays the holder's clock (tools that add leaseDurationSeconds
// to it stay right); acquireTime is off by at most the number of writes
// per second, minus one.
func distinctTimes(prev coordv1.LeaseSpec, holder string, secs, transitions int32, acquiredAt, now time.Time) (acquired, renewed metav1.MicroTime) {
	same := prev.HolderIdentity != nil && *prev.HolderIdentity == holder && holder != ""
	if same && prev.RenewTime != nil && now.Before(prev.RenewTime.Time) {
		now = prev.RenewTime.Time
	}
	renewed, acquired = metav1.NewMicroTime(now), metav1.NewMicroTime(acquiredAt)
	if same && prev.LeaseDurationSeconds != nil && *prev.LeaseDurationSeconds == secs &&
		prev.LeaseTransitions != nil && *prev.LeaseTransitions == transitions &&
		prev.RenewTime != nil && prev.RenewTime.Unix() == now.Unix() && prev.AcquireTime != nil {
		if back := time.Unix(prev.AcquireTime.Unix()-1, 0); back.Before(acquiredAt) {
			acquired = metav1.NewMicroTime(back)
		}
	}
	return acquired, renewed
}
