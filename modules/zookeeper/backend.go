package zklease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// maxAttempts bounds how often an operation reads again after its
// conditional write lost a race.
const maxAttempts = 4

// ZooKeeper create flags for a multi's create operation.
const (
	flagEphemeralSequential  = zk.FlagEphemeral | zk.FlagSequence
	flagPersistentSequential = zk.FlagSequence
)

// Backend is the ZooKeeper implementation of fxelection.Backend,
// backendkit.Notifier and backendkit.Transferer. It is safe for concurrent
// use. It does not own its connection: closing it is the caller's business
// (after the electors using the Backend have stopped and Close was called).
// All its ephemeral lease znodes belong to the connection's one session.
type Backend struct {
	// Redacting is the operations' one way out: Acquire, Renew, Release,
	// Get and Transfer call the unexported methods below and redact every
	// error with the secrets given to New.
	backendkit.Redacting

	conn   *zk.Conn
	prefix string
	acl    []zk.ACL
	push   bool

	session time.Duration // Options.SessionTimeout

	tracker backendkit.ExpiryTracker // observed time for persistent (orphan) records

	mu      sync.Mutex
	held    map[string]*heldLease // by lease znode path: our leases' expiry
	closed  bool
	reapers sync.WaitGroup // expiry deletions in flight

	// stop ends expiry deletions in flight when Close is called; done is
	// stop's context.
	done context.Context
	stop context.CancelFunc

	pushMu  sync.Mutex
	watches map[string]*watch // by election
	nextSub int
}

var (
	_ fxelection.Backend      = (*Backend)(nil)
	_ backendkit.Notifier     = (*Backend)(nil)
	_ backendkit.NamedBackend = (*Backend)(nil)
	_ backendkit.Transferer   = (*Backend)(nil)

	_ backendkit.RenewDeadlineLimiter = (*Backend)(nil)
)

// heldLease is one of this Backend's own leases: the znode it created and
// when the lease ends by this process's monotonic clock unless renewed.
type heldLease struct {
	czxid    int64
	deadline time.Time
	timer    *time.Timer
}

// New returns a Backend storing leases through conn, made with
// opts.SessionTimeout (when stated, electors on the Backend refuse a
// RenewDeadline that is not shorter). It validates opts with
// Options.Validate and does no I/O; a nil conn is an error. secrets are
// values to redact from every error (the digest credentials the connection
// authenticates with, if any: see backendkit.Credentials).
func New(conn *zk.Conn, opts Options, secrets ...string) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if conn == nil {
		return nil, fmt.Errorf("%w: nil connection", ErrInvalidOptions)
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	acl := opts.ACL
	if len(acl) == 0 {
		acl = zk.WorldACL(zk.PermAll)
	}
	done, stop := context.WithCancel(context.Background())
	b := &Backend{
		done:    done,
		stop:    stop,
		conn:    conn,
		prefix:  prefix,
		acl:     acl,
		push:    !opts.DisablePush,
		session: opts.SessionTimeout,
		held:    make(map[string]*heldLease),
		watches: make(map[string]*watch),
	}
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: b.acquire, Renew: b.renew, Release: b.release, Get: b.get, Transfer: b.transfer,
	}, backendkit.Credentials("", secrets...)...)
	return b, nil
}

// RenewDeadlineLimit implements backendkit.RenewDeadlineLimiter:
// Options.SessionTimeout (0 when not stated), which an elector's, pool's or
// Locker's RenewDeadline must be shorter than.
func (b *Backend) RenewDeadlineLimit() (time.Duration, string) {
	return b.session, "session timeout (zklease Options.SessionTimeout, the config module's session_timeout)"
}

// BackendName returns "zookeeper".
func (b *Backend) BackendName() string { return "zookeeper" }

// Prefix returns the prefix (Options.Prefix or DefaultPrefix).
func (b *Backend) Prefix() string { return b.prefix }

// Path returns the persistent znode under which election's lease znode
// lives, for operators and tests.
func (b *Backend) Path(election string) string { return b.prefix + "/" + escapeName(election) }

// call runs f, a blocking call on the connection (go-zookeeper has no
// contexts), on a goroutine of its own and returns its result, or ctx's
// error as soon as ctx is done. The goroutine ends when f returns: when
// the server answers, or at the latest when the connection is closed.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// node is a lease znode as read: its path, name, data and stat.
type node struct {
	path, name string
	data       []byte
	stat       *zk.Stat
}

// state is an election's node as read: the version of the election's
// persistent node (every change of leadership is conditioned on it) and
// its lease znode, if any.
type state struct {
	dirVersion int32
	lease      *node
}

// read reads election's persistent node and its lease znode. found is
// false when the persistent node does not exist. More than one child, or
// a child that is not a lease znode, is a foreign record.
func (b *Backend) read(ctx context.Context, election string) (st state, found bool, err error) {
	dir := b.Path(election)
	for attempt := 1; ; attempt++ {
		type children struct {
			names []string
			stat  *zk.Stat
		}
		c, err := call(ctx, func() (children, error) {
			names, stat, err := b.conn.Children(dir)
			return children{names, stat}, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return state{}, false, nil
		}
		if err != nil {
			return state{}, false, err
		}
		st = state{dirVersion: c.stat.Version}
		switch len(c.names) {
		case 0:
			return st, true, nil
		case 1:
		default:
			return state{}, false, fmt.Errorf("%w: %d znodes under the election's node", backendkit.ErrInvalidRecord, len(c.names))
		}
		name := c.names[0]
		if !validNodeName(name) {
			return state{}, false, fmt.Errorf("%w: znode %q is not a lease znode", backendkit.ErrInvalidRecord, name)
		}
		path := dir + "/" + name
		n, err := call(ctx, func() (node, error) {
			data, stat, err := b.conn.Get(path)
			return node{path: path, name: name, data: data, stat: stat}, err
		})
		if errors.Is(err, zk.ErrNoNode) && attempt < maxAttempts {
			continue // gone since the listing: read again
		}
		if err != nil {
			return state{}, false, err
		}
		st.lease = &n
		return st, true, nil
	}
}

// decode decodes a lease znode of election.
func decode(election string, n *node) (fxelection.Lease, error) {
	l, err := decodeRecord(election, storedNode{Name: n.name, Data: n.data, Czxid: n.stat.Czxid, Mzxid: n.stat.Mzxid})
	if err != nil {
		return fxelection.Lease{}, err
	}
	l.Version = formatVersion(n.name, n.stat.Czxid)
	return l, nil
}

// ensureDir creates election's persistent node and its ancestors where
// missing.
func (b *Backend) ensureDir(ctx context.Context, election string) error {
	full := b.Path(election)
	for i := 1; i <= len(full); i++ {
		if i < len(full) && full[i] != '/' {
			continue
		}
		p := full[:i]
		_, err := call(ctx, func() (string, error) { return b.conn.Create(p, nil, zk.FlagPersistent, b.acl) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// conflict reports whether err is a conditional write that lost a race
// (the node changed, appeared or went away since it was read).
func conflict(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists)
}

// acquire is Acquire (see backendkit.Redacting), implementing
// fxelection.Backend. It lists the election's node (creating it on first
// use) and reads its lease znode, then, in one ZooKeeper multi conditioned
// on the election node's version (and on the old lease znode's version where
// it deletes one), writes:
//
//   - on a free election: a new ephemeral sequential lease znode of this
//     Backend's session, holding req's record; the term is the multi's
//     zxid, the new znode's creation zxid;
//   - on a live record of req.Identity under another incarnation, or an
//     orphan record (persistent: a hand-over hint) nobody renewed for its
//     whole duration as this Backend saw it: the old znode deleted and a
//     new one created in the same step, so the term is again the multi's
//     zxid, above every term the election had;
//   - on a live record req continues (req.Continues): this session's
//     znode rewritten in place (same creation zxid, same term), or, when
//     another session or none owns it, replaced by a znode of this session
//     whose record states the continued term.
//
// Anyone else's record gives a *backendkit.HeldError; anything that is not
// a valid record, an error matching backendkit.ErrInvalidRecord (it is
// never taken over; an ephemeral one goes with its session). The lease then
// lasts until Release, until this Backend's clock says Duration has passed
// since the start of this call or of the last successful Renew (it deletes
// the znode then), or until ZooKeeper expires the session, whichever comes
// first. A write this call gave up on (ctx done) that ZooKeeper applied
// all the same gets the same expiry.
func (b *Backend) acquire(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	if err := req.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	start := time.Now()
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		st, found, err := b.read(ctx, req.Election)
		if err != nil {
			b.tracker.Forget(req.Election)
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		if !found {
			if err := b.ensureDir(ctx, req.Election); err != nil {
				return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
			}
			continue
		}
		if st.lease == nil {
			b.tracker.Forget(req.Election)
			l, err := b.create(ctx, req, st, 0, start)
			if conflict(err) {
				continue
			}
			return l, err
		}
		cur, err := decode(req.Election, st.lease)
		if err != nil {
			b.tracker.Forget(req.Election)
			return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
		}
		stat := st.lease.stat
		switch {
		case req.Continues(cur):
			if stat.EphemeralOwner != 0 && stat.EphemeralOwner == b.conn.SessionID() && b.isHeld(st.lease.path, stat.Czxid) {
				l, err := b.rewrite(ctx, req, st.lease, cur.Term, start)
				if conflict(err) {
					continue
				}
				return l, err
			}
			l, err := b.create(ctx, req, st, cur.Term, start)
			if conflict(err) {
				continue
			}
			return l, err
		case cur.Holder == req.Identity,
			stat.EphemeralOwner == 0 && b.tracker.Expired(req.Election, fmt.Sprint(stat.Mzxid), st.lease.name, cur.Duration):
			l, err := b.create(ctx, req, st, 0, start)
			if conflict(err) {
				continue
			}
			return l, err
		default:
			return fxelection.Lease{}, &backendkit.HeldError{Holder: cur}
		}
	}
	return fxelection.Lease{}, errors.New("acquire lease: the election kept changing under the write")
}

// create writes req's record as a new lease znode in one multi: the
// election node's version bumped (conditioned on st.dirVersion), the old
// lease znode deleted (conditioned on its version) if st has one, and an
// ephemeral sequential znode of this session created (persistent with
// persistent true). keep, when not 0, is a continued leadership's term,
// stated in the record; otherwise the term is the multi's zxid.
func (b *Backend) create(ctx context.Context, req backendkit.AcquireRequest, st state, keep uint64, start time.Time) (fxelection.Lease, error) {
	return b.createNode(ctx, "acquire lease", req, st, keep, false, start)
}

func (b *Backend) createNode(ctx context.Context, op string, req backendkit.AcquireRequest, st state, keep uint64, persistent bool, start time.Time) (fxelection.Lease, error) {
	l := fxelection.Lease{
		Election:    req.Election,
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    maps.Clone(req.Metadata),
		Term:        keep,
		Duration:    req.Duration,
	}
	data, err := encodeRecord(l, keep != 0)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	dir := b.Path(req.Election)
	ops := []any{&zk.SetDataRequest{Path: dir, Data: []byte{}, Version: st.dirVersion}}
	if st.lease != nil {
		ops = append(ops, &zk.DeleteRequest{Path: st.lease.path, Version: st.lease.stat.Version})
	}
	flags := int32(flagEphemeralSequential)
	if persistent {
		flags = flagPersistentSequential
	}
	ops = append(ops, &zk.CreateRequest{Path: dir + "/" + leaseNodePrefix, Data: data, Acl: b.acl, Flags: flags})
	res, err := call(ctx, func() ([]zk.MultiResponse, error) {
		res, err := b.conn.Multi(ops...)
		switch {
		case persistent:
		case err == nil:
			b.armCreated(res, req.Duration, start)
		case !refused(err):
			// The multi may have been applied with its reply lost (the
			// connection broke): a lease znode of this session that
			// nobody knows of would live as long as the session.
			b.armSweep(req.Election, start.Add(req.Duration))
		}
		return res, err
	})
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	czxid, name, ok := created(res)
	if !ok {
		return fxelection.Lease{}, fmt.Errorf("%s: unexpected multi response", op)
	}
	if l.Term == 0 {
		l.Term = uint64(czxid)
	}
	l.Version = formatVersion(name, czxid)
	b.tracker.Forget(req.Election)
	return l, nil
}

// created returns the creation zxid and name of the znode a successful
// create multi made: the zxid is the one the election node's write got
// in the same multi (all of a multi's writes share one zxid).
func created(res []zk.MultiResponse) (czxid int64, name string, ok bool) {
	if len(res) < 2 || res[0].Stat == nil {
		return 0, "", false
	}
	path := res[len(res)-1].String
	i := strings.LastIndexByte(path, '/')
	if i < 0 || !validNodeName(path[i+1:]) || res[0].Stat.Mzxid <= 0 {
		return 0, "", false
	}
	return res[0].Stat.Mzxid, path[i+1:], true
}

// armCreated arms the expiry of the ephemeral lease znode a successful
// create multi made (on the call's goroutine, so even a write the caller
// gave up on expires).
func (b *Backend) armCreated(res []zk.MultiResponse, d time.Duration, start time.Time) {
	czxid, _, ok := created(res)
	if !ok {
		return
	}
	b.arm(res[len(res)-1].String, czxid, start.Add(d))
}

// rewrite rewrites this session's own lease znode n in place with req's
// record stating term (a continued leadership), conditioned on its
// version, and extends its expiry.
func (b *Backend) rewrite(ctx context.Context, req backendkit.AcquireRequest, n *node, term uint64, start time.Time) (fxelection.Lease, error) {
	l := fxelection.Lease{
		Election:    req.Election,
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    maps.Clone(req.Metadata),
		Term:        term,
		Duration:    req.Duration,
		Version:     formatVersion(n.name, n.stat.Czxid),
	}
	data, err := encodeRecord(l, true)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	czxid := n.stat.Czxid
	if _, err := call(ctx, func() (*zk.Stat, error) {
		s, err := b.conn.Set(n.path, data, n.stat.Version)
		if err == nil && s.Czxid == czxid {
			b.extend(n.path, czxid, start.Add(req.Duration))
		}
		return s, err
	}); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	b.tracker.Forget(req.Election)
	return l, nil
}

// refused reports whether err is ZooKeeper's definite refusal of a
// request, which then changed nothing (as opposed to a broken connection,
// after which the request may or may not have been applied).
func refused(err error) bool {
	for _, r := range []error{zk.ErrBadVersion, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNoAuth,
		zk.ErrInvalidACL, zk.ErrNotEmpty, zk.ErrNoChildrenForEphemerals, zk.ErrBadArguments, zk.ErrAPIError} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// armSweep makes sure that a lease znode of this session in election that
// this Backend does not know of (a create whose reply was lost) ends by
// deadline: then, unless the znode is one of this Backend's known leases,
// it is deleted as an expired one.
func (b *Backend) armSweep(election string, deadline time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	time.AfterFunc(time.Until(deadline), func() {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return
		}
		b.reapers.Add(1)
		b.mu.Unlock()
		defer b.reapers.Done()
		b.sweep(election)
	})
}

// sweep deletes election's lease znode if this Backend's session owns it
// and it is not one of its known, unexpired leases.
func (b *Backend) sweep(election string) {
	st, found, err := b.read(b.done, election)
	if err != nil || !found || st.lease == nil {
		return
	}
	stat := st.lease.stat
	if stat.EphemeralOwner == 0 || stat.EphemeralOwner != b.conn.SessionID() || b.isHeld(st.lease.path, stat.Czxid) {
		return
	}
	b.mu.Lock()
	_, known := b.held[st.lease.path]
	b.mu.Unlock()
	if known {
		return // its own expiry deletes it
	}
	b.deleteOwn(st.lease.path, stat.Czxid)
}

// arm records a lease znode this Backend created and deletes it at
// deadline unless extend moves the deadline first.
func (b *Backend) arm(path string, czxid int64, deadline time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if h := b.held[path]; h != nil {
		h.timer.Stop()
	}
	h := &heldLease{czxid: czxid, deadline: deadline}
	h.timer = time.AfterFunc(time.Until(deadline), func() { b.expire(path, h) })
	b.held[path] = h
}

// extend moves the expiry of this Backend's lease znode path (creation
// zxid czxid) to deadline if that is later. It reports false when the
// lease is no longer held (expired by its deadline, released, or never
// ours).
func (b *Backend) extend(path string, czxid int64, deadline time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.held[path]
	if h == nil || h.czxid != czxid {
		return false
	}
	if deadline.After(h.deadline) {
		h.deadline = deadline
	}
	return true
}

// isHeld reports whether path (creation zxid czxid) is one of this
// Backend's leases whose expiry has not come.
func (b *Backend) isHeld(path string, czxid int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.held[path]
	return h != nil && h.czxid == czxid && time.Now().Before(h.deadline)
}

// forget stops path's expiry (released, or found gone).
func (b *Backend) forget(path string, czxid int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.held[path]; h != nil && h.czxid == czxid {
		h.timer.Stop()
		delete(b.held, path)
	}
}

// expire runs on h's timer: unless the deadline moved, the lease has ended
// by this process's clock, and its znode is deleted (only that znode: its
// path is unique and its creation zxid is checked).
func (b *Backend) expire(path string, h *heldLease) {
	b.mu.Lock()
	if b.held[path] != h || b.closed {
		b.mu.Unlock()
		return
	}
	if wait := time.Until(h.deadline); wait > 0 {
		h.timer.Reset(wait)
		b.mu.Unlock()
		return
	}
	delete(b.held, path)
	b.reapers.Add(1)
	b.mu.Unlock()
	defer b.reapers.Done()
	b.deleteOwn(path, h.czxid)
}

// deleteOwn deletes the znode path if its creation zxid is czxid: a lease
// znode's path is never reused while its election node exists, and the
// creation zxid tells a re-created one apart. Failures are ignored: the
// znode then goes with its session. Close stops it waiting.
func (b *Backend) deleteOwn(path string, czxid int64) {
	stat, err := call(b.done, func() (*zk.Stat, error) {
		ok, stat, err := b.conn.Exists(path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return stat, err
	})
	if err != nil || stat.Czxid != czxid {
		return
	}
	_, _ = call(b.done, func() (struct{}, error) { return struct{}{}, b.conn.Delete(path, stat.Version) })
}

// renew is Renew (see backendkit.Redacting), implementing
// fxelection.Backend: a sync and a read of the lease's znode (its unique
// name, from lease.Version), which must still exist with the same creation
// zxid, be owned by this Backend's current session and name lease.Holder
// with lease.Term; and this Backend's expiry of it must not have come. It
// writes nothing: the lease's expiry moves to Duration after the start of
// this call on this process's clock, and ZooKeeper keeps the session alive
// by itself. Anything else — the znode deleted (released, expired, session
// expired, deleted from outside) or replaced (a new incarnation, a
// hand-over) — gives an error matching backendkit.ErrLeaseLost; a lease of
// another Backend too.
func (b *Backend) renew(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	start := time.Now()
	name, czxid, ok := parseVersion(l.Version)
	if !ok || l.Term == 0 || l.Duration <= 0 || l.Duration > backendkit.MaxRecordDuration {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w: not a lease this backend issued", backendkit.ErrLeaseLost)
	}
	dir := b.Path(l.Election)
	path := dir + "/" + name
	if !b.isHeld(path, czxid) {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	// A sync makes the read see every write ZooKeeper's leader committed
	// before it, whichever server the session is connected to.
	if _, err := call(ctx, func() (string, error) { return b.conn.Sync(dir) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	n, err := call(ctx, func() (node, error) {
		data, stat, err := b.conn.Get(path)
		return node{path: path, name: name, data: data, stat: stat}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		b.forget(path, czxid)
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if n.stat.Czxid != czxid || n.stat.EphemeralOwner == 0 || n.stat.EphemeralOwner != b.conn.SessionID() {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	got, err := decode(l.Election, &n)
	if err != nil || got.Holder != l.Holder || got.Term != l.Term {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	if !b.extend(path, czxid, start.Add(l.Duration)) {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	return l, nil
}

// release is Release (see backendkit.Redacting), implementing
// fxelection.Backend: it ends this Backend's expiry of the lease and deletes
// the lease's znode (its unique name, from lease.Version) if it still has
// the creation zxid, holder and term of lease, conditioned on the version
// read. Anything else is left alone and nil is returned: a lease no longer
// ours (expired, taken over, already released, a foreign value). The term
// survives: the next holder's is a later zxid.
func (b *Backend) release(ctx context.Context, l fxelection.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	name, czxid, ok := parseVersion(l.Version)
	if !ok {
		return nil
	}
	path := b.Path(l.Election) + "/" + name
	n, err := call(ctx, func() (node, error) {
		data, stat, err := b.conn.Get(path)
		return node{path: path, name: name, data: data, stat: stat}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		b.forget(path, czxid)
		return nil
	}
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if n.stat.Czxid != czxid {
		return nil
	}
	if got, err := decode(l.Election, &n); err != nil || got.Holder != l.Holder || got.Term != l.Term {
		return nil
	}
	_, err = call(ctx, func() (struct{}, error) {
		err := b.conn.Delete(path, n.stat.Version)
		if err == nil || refused(err) {
			// Deleted, or not ours to delete. After a broken connection
			// the delete may not have been applied: the lease's expiry
			// stays armed and deletes the znode at its deadline.
			b.forget(path, czxid)
		}
		return struct{}{}, err
	})
	if err != nil && !conflict(err) {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// transfer is Transfer (see backendkit.Redacting), implementing
// backendkit.Transferer: it ends lease, matched as Release matches it, and
// in the same ZooKeeper multi (conditioned on the election node's version
// and the lease znode's version) deletes its znode and creates the
// successor's record as a new lease znode with a new term (the multi's
// zxid). That znode is persistent, not ephemeral: an ephemeral one would
// belong to the caller's session and vanish when the caller, typically
// shutting down, closes it. The successor (whose identity it names, under no
// incarnation) takes it at once with a higher term; other candidates see it
// held until they have observed it unchanged for req.Duration on their own
// clocks (backendkit.ExpiryTracker), after which they may take it over. If
// the lease is no longer the caller's, or req is for another election,
// nothing changes and the error matches backendkit.ErrLeaseLost.
func (b *Backend) transfer(ctx context.Context, l fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	const op = "transfer lease"
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := req.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	if req.Election != l.Election {
		return fxelection.Lease{}, fmt.Errorf("%s: %w: the request is for another election", op, backendkit.ErrLeaseLost)
	}
	name, czxid, ok := parseVersion(l.Version)
	if !ok {
		return fxelection.Lease{}, fmt.Errorf("%s: %w: not a lease this backend issued", op, backendkit.ErrLeaseLost)
	}
	start := time.Now()
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		st, found, err := b.read(ctx, l.Election)
		if err != nil && !errors.Is(err, backendkit.ErrInvalidRecord) {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", op, err)
		}
		if err != nil || !found || st.lease == nil || st.lease.name != name || st.lease.stat.Czxid != czxid {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", op, backendkit.ErrLeaseLost)
		}
		if got, err := decode(l.Election, st.lease); err != nil || got.Holder != l.Holder || got.Term != l.Term {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", op, backendkit.ErrLeaseLost)
		}
		out, err := b.createNode(ctx, op, req, st, 0, true, start)
		if conflict(err) {
			continue
		}
		if err == nil {
			b.forget(st.lease.path, czxid)
		}
		return out, err
	}
	return fxelection.Lease{}, fmt.Errorf("%s: the election kept changing under the write", op)
}

// get is Get (see backendkit.Redacting), implementing fxelection.Backend: a
// sync, then the election's lease znode and its record, or
// backendkit.ErrNoLease when there is none. ExpiresAt is zero: an ephemeral
// lease ends by its holder's clock or its session's expiry, which no other
// client can know.
func (b *Backend) get(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	dir := b.Path(election)
	if _, err := call(ctx, func() (string, error) { return b.conn.Sync(dir) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	st, found, err := b.read(ctx, election)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	if !found || st.lease == nil {
		return fxelection.Lease{}, backendkit.ErrNoLease
	}
	l, err := decode(election, st.lease)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	return l, nil
}
