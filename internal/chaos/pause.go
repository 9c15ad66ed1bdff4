package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/fence"
)

// The pause workload: Candidates members (electors, or lock clients), each
// a child process (this test binary run again, see pause_child.go), frozen
// with SIGSTOP and resumed with SIGCONT on a seeded schedule. Every member
// reports on a pipe what it believes (leads, holds a key, with the term)
// and the fenced writes it makes; the runner is the fence they write
// through (Options.Fence, a store's guard, or a resource in the runner that
// refuses lower terms), so the order in which writes arrive is exact.

// Pause lengths, as counted in PauseReport.ByLength (G is LeaseDuration −
// RenewDeadline, the time a lease outlives its holder's renew deadline).
const (
	pauseShort    = "pause<G"         // G/5 … 4G/5
	pauseAbout    = "pause≈G"         // 9G/10 … 11G/10
	pauseBeyond   = "pause≫G"         // 2 … 3 leases
	pauseInFlight = "pause-in-flight" // any of the above, begun while a write is in flight
)

var pauseWeights = []faultWeight{{pauseShort, 3}, {pauseAbout, 3}, {pauseBeyond, 2}, {pauseInFlight, 3}}

// PauseReport is what the pause workload measured.
type PauseReport struct {
	// Locks says the members were lock clients (on Keys keys), not
	// electors.
	Locks bool `json:"locks"`
	Keys  int  `json:"keys,omitempty"`
	// Pauses counts SIGSTOP…SIGCONT pairs; ByLength by drawn length;
	// WhileHolding those that froze a member while it led or held a key;
	// WriteInFlight those that froze a member between a fenced write's
	// check of its leadership and the write's arrival.
	Pauses        int            `json:"pauses"`
	ByLength      map[string]int `json:"by_length"`
	WhileHolding  int            `json:"while_holding"`
	WriteInFlight int            `json:"write_in_flight"`
	// Leaderships counts leaderships (or holds) the members reported.
	Leaderships int `json:"leaderships"`
	// PauseOverlaps counts instants where a paused holder (frozen, or
	// resumed and not yet aware of its loss) and its successor both
	// believed: the window fencing is for. LongestAfterResume is the
	// longest such belief past the SIGCONT.
	PauseOverlaps      int           `json:"pause_overlaps"`
	LongestAfterResume time.Duration `json:"longest_after_resume"`
	// LossAfterResume: a holder paused while holding whose lease another
	// member took → it stopped believing, from the SIGCONT; against
	// RenewDeadline + Slack. Kept and Replaced count, by drawn length, the
	// pauses of a holder after which it led (held) on, and those after
	// which another member had taken over.
	LossAfterResume Stats          `json:"loss_after_resume"`
	Kept            map[string]int `json:"kept"`
	Replaced        map[string]int `json:"replaced"`
	// Fenced writes: Guard names the fence ("store guard" or "in-process");
	// StaleRefused counts late writes (a writer paused during its
	// leadership, or past its end) refused; LateAccepted late writes
	// accepted because no newer term had written yet (the fence guards'
	// documented limit); LiveRefused writes refused while their writer
	// was live and unpaused (must be 0).
	Guard        string `json:"guard"`
	StaleRefused int    `json:"stale_refused"`
	LateAccepted int    `json:"late_accepted"`
	LiveRefused  int    `json:"live_refused"`
	// Convergence is how long after the last pause ended exactly one
	// elector led (electors only).
	Convergence time.Duration `json:"convergence"`
}

type pauseWin struct {
	kind       string
	start, end int64 // mono
}

type belief struct {
	m          *pmember
	key        int
	term       uint64
	start, end int64 // end -1: open
}

type pwrite struct {
	m              *pmember
	key            int
	term           uint64
	begin, sent    int64 // child's mono
	arrive         int64
	accepted       bool
	late, inFlight bool
}

// pmember is one member process.
type pmember struct {
	idx      int
	identity string
	cmd      *exec.Cmd
	ctl      *os.File // write end; closing it stops the member
	out      *tailBuffer
	read     chan struct{} // closed when its events ended
	exited   chan struct{} // closed when the process was waited for
	waitErr  error

	// under pauseRun.mu
	ready      bool
	stopped    bool
	paused     bool
	armed      string // "length|duration": a pause to start at the next write's begin
	armedUntil int64  // mono; an arm expires unused after two retry periods
	open       map[int]*belief
	begins     map[uint64]int64
	pauses     []pauseWin
	beliefs    []*belief
}

// pauseRun is one run of the pause workload.
type pauseRun struct {
	t     *testing.T
	o     Options
	rng   *rand.Rand // scheduler only
	names []string   // the election, or the keys
	locks bool

	mu         sync.Mutex
	members    []*pmember
	writes     []*pwrite
	highest    []uint64 // per key: the highest term the fence accepted
	violations []string
	counts     map[string]int
	pausing    sync.WaitGroup
	lastThaw   int64
	stopAt     int64 // when the members were told to stop
}

func (p *pauseRun) violate(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.violations = append(p.violations, fmt.Sprintf(format, args...))
}

// runPauses runs the pause workload and returns its report.
func runPauses(t *testing.T, o Options) *Report {
	p := &pauseRun{t: t, o: o, locks: o.Locks, counts: map[string]int{}, rng: rand.New(rand.NewPCG(o.Seed, 0x9a05e))}
	run := fmt.Sprintf("%d-%d", o.Seed%1_000_000, time.Now().UnixNano()%1_000_000)
	if o.Locks {
		for k := range o.Keys {
			p.names = append(p.names, fmt.Sprintf("pausechaos-%s-k%d", run, k))
		}
	} else {
		p.names = []string{"pausechaos-" + run}
	}
	p.highest = make([]uint64, len(p.names))
	t0 := mono()
	if err := p.startAll(); err != nil {
		p.violate("start members: %v", err)
	} else {
		p.schedule(t0 + int64(o.Duration))
	}
	p.pausing.Wait()
	conv := p.settle()
	p.stopAll()
	rep := p.analyse(t0)
	rep.Duration = time.Duration(mono() - t0)
	rep.Pauses.Convergence = conv
	return rep
}

// runPattern is the -test.run pattern of exactly the test named name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, s := range parts {
		parts[i] = "^" + regexp.QuoteMeta(s) + "$"
	}
	return strings.Join(parts, "/")
}

// startAll starts the members and waits until each is up.
func (p *pauseRun) startAll() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for i := range p.o.Candidates {
		if err := p.startMember(self, i); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p.mu.Lock()
		up := 0
		for _, m := range p.members {
			if m.ready {
				up++
			}
		}
		bad := len(p.violations) > 0
		p.mu.Unlock()
		switch {
		case up == len(p.members):
			return nil
		case bad:
			return errors.New("a member failed")
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d members up after 2 minutes", up, len(p.members))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *pauseRun) startMember(self string, i int) error {
	tm := p.o.Timing
	conf := childConf{
		Target: p.o.Target, Identity: fmt.Sprintf("pausechaos-%d", i), Timing: tm, MaxHold: p.o.MaxHold,
		InFlight: max(tm.RetryPeriod/8, 5*time.Millisecond),
	}
	if p.locks {
		conf.Keys = p.names
	} else {
		conf.Election = p.names[0]
	}
	raw, err := json.Marshal(conf)
	if err != nil {
		return err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		_, _ = ctlR.Close(), ctlW.Close()
		return err
	}
	m := &pmember{
		idx: i, identity: conf.Identity, ctl: ctlW, out: &tailBuffer{max: 16 << 10},
		read: make(chan struct{}), exited: make(chan struct{}), open: map[int]*belief{}, begins: map[uint64]int64{},
	}
	cmd := exec.Command(self, "-test.run="+runPattern(p.t.Name()), "-test.count=1", "-test.timeout=2h")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	cmd.ExtraFiles = []*os.File{ctlR, evW} // fd 3, fd 4
	cmd.Stdout, cmd.Stderr = m.out, m.out
	childAttr(cmd)
	m.cmd = cmd
	err = cmd.Start()
	_, _ = ctlR.Close(), evW.Close()
	if err != nil {
		_, _ = ctlW.Close(), evR.Close()
		return fmt.Errorf("start member %d: %w", i, err)
	}
	p.mu.Lock()
	p.members = append(p.members, m)
	p.mu.Unlock()
	go func() { // ends when the member's event pipe closes (it exited)
		defer close(m.read)
		defer evR.Close()
		sc := bufio.NewScanner(evR)
		for sc.Scan() {
			var msg childMsg
			if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
				p.violate("%s: bad event %q: %v", m.identity, sc.Text(), err)
				continue
			}
			p.handle(m, msg)
		}
	}()
	go func() { // ends when the process exits
		m.waitErr = cmd.Wait()
		close(m.exited)
	}()
	return nil
}

// handle records one event of m.
func (p *pauseRun) handle(m *pmember, msg childMsg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch msg.K {
	case evReady:
		m.ready = true
	case evStopped:
		m.stopped = true
	case evError:
		p.violations = append(p.violations, fmt.Sprintf("%s: %s", m.identity, msg.Err))
	case evLead:
		if b := m.open[msg.Key]; b != nil {
			b.end = msg.At
		}
		b := &belief{m: m, key: msg.Key, term: msg.Term, start: msg.At, end: -1}
		m.open[msg.Key] = b
		m.beliefs = append(m.beliefs, b)
	case evUnlead:
		if b := m.open[msg.Key]; b != nil {
			b.end = msg.At
			delete(m.open, msg.Key)
		}
	case evWBegin:
		m.begins[msg.ID] = msg.At
		if kind := m.armed; kind != "" && !m.paused {
			m.armed = ""
			if mono() < m.armedUntil {
				p.startPause(m, kind, true)
			}
		}
	case evWrite:
		w := &pwrite{m: m, key: msg.Key, term: msg.Term, begin: m.begins[msg.ID], sent: msg.At, arrive: mono()}
		delete(m.begins, msg.ID)
		if msg.Key < 0 || msg.Key >= len(p.names) {
			p.violations = append(p.violations, fmt.Sprintf("%s: write to unknown key %d", m.identity, msg.Key))
			return
		}
		p.fence(w)
		p.writes = append(p.writes, w)
	default:
		p.violations = append(p.violations, fmt.Sprintf("%s: unknown event %q", m.identity, msg.K))
	}
}

// fence applies w: through the store's guard (Options.Fence) if set, else
// through the in-process rule every guard follows (refuse a term lower than
// the highest accepted). Called under mu, so writes apply in one order.
func (p *pauseRun) fence(w *pwrite) {
	if p.o.Fence == nil {
		w.accepted = w.term >= p.highest[w.key]
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := p.o.Fence(ctx, fence.Token{Election: p.names[w.key], Term: w.term})
		cancel()
		switch {
		case err == nil:
			w.accepted = true
		case errors.Is(err, fence.ErrStaleTerm):
		default:
			p.violations = append(p.violations, fmt.Sprintf("%s: fenced write with term %d: %v", w.m.identity, w.term, err))
			return
		}
	}
	if w.accepted {
		p.highest[w.key] = max(p.highest[w.key], w.term)
	}
}

// pauseSpan draws how long a pause of kind lasts.
func (p *pauseRun) pauseSpan(kind string) time.Duration {
	tm := p.o.Timing
	g := tm.LeaseDuration - tm.RenewDeadline
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(p.rng.Int64N(int64(hi-lo)+1)) }
	switch kind {
	case pauseShort:
		return between(g/5, g*4/5)
	case pauseAbout:
		return between(g*9/10, g*11/10)
	default:
		return between(2*tm.LeaseDuration, 3*tm.LeaseDuration)
	}
}

// schedule injects pauses until end (mono): every 0 to 2 × MeanGap a
// pause of a drawn length, of a holder six times in ten; at most all but
// one member paused at once.
func (p *pauseRun) schedule(end int64) {
	for mono() < end {
		gap := time.Duration(p.rng.Int64N(int64(2*p.o.MeanGap) + 1))
		time.Sleep(min(gap, time.Duration(end-mono())))
		if mono() >= end {
			return
		}
		kind := drawFault(p.rng, pauseWeights)
		length := kind
		if kind == pauseInFlight {
			length = drawFault(p.rng, pauseWeights[:3])
		}
		p.mu.Lock()
		var free, holders []*pmember
		paused := 0
		for _, m := range p.members {
			if m.armed != "" && mono() >= m.armedUntil {
				m.armed = ""
			}
			switch {
			case m.paused:
				paused++
			case m.armed != "":
			default:
				free = append(free, m)
				if len(m.open) > 0 {
					holders = append(holders, m)
				}
			}
		}
		if paused+1 >= len(p.members) || len(free) == 0 || (kind == pauseInFlight && len(holders) == 0) {
			p.mu.Unlock()
			continue
		}
		var m *pmember
		if len(holders) > 0 && (kind == pauseInFlight || p.rng.IntN(10) < 6) {
			m = holders[p.rng.IntN(len(holders))]
		} else {
			m = free[p.rng.IntN(len(free))]
		}
		d := p.pauseSpan(length)
		if kind == pauseInFlight {
			m.armed = length + "|" + d.String()
			m.armedUntil = mono() + int64(2*p.o.Timing.RetryPeriod)
		} else {
			p.startPauseFor(m, length, d, false)
		}
		p.mu.Unlock()
	}
}

// startPause starts an armed pause (kind "length|duration") of m; under mu.
func (p *pauseRun) startPause(m *pmember, armed string, inFlight bool) {
	length, ds, _ := strings.Cut(armed, "|")
	d, _ := time.ParseDuration(ds)
	p.startPauseFor(m, length, d, inFlight)
}

// startPauseFor freezes m now and thaws it after d in the background;
// under mu.
func (p *pauseRun) startPauseFor(m *pmember, length string, d time.Duration, inFlight bool) {
	m.paused = true
	p.counts[length]++
	if inFlight {
		p.counts[pauseInFlight]++
	}
	start := mono()
	if err := freeze(m.cmd.Process.Pid); err != nil {
		p.violations = append(p.violations, fmt.Sprintf("SIGSTOP %s: %v", m.identity, err))
		m.paused = false
		return
	}
	p.pausing.Add(1)
	go func() { // ends after d
		defer p.pausing.Done()
		time.Sleep(d)
		err := thaw(m.cmd.Process.Pid)
		end := mono()
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.violations = append(p.violations, fmt.Sprintf("SIGCONT %s: %v", m.identity, err))
		}
		m.paused = false
		m.pauses = append(m.pauses, pauseWin{kind: length, start: start, end: end})
		p.lastThaw = max(p.lastThaw, end)
	}()
}

// settle disarms pending pauses and, for electors, waits until exactly one
// leads; it returns how long after the last thaw that was.
func (p *pauseRun) settle() time.Duration {
	p.mu.Lock()
	for _, m := range p.members {
		m.armed = ""
	}
	from := max(p.lastThaw, mono())
	p.mu.Unlock()
	if len(p.violations) > 0 {
		return 0
	}
	if p.locks {
		p.settleLocks(from)
		return 0
	}
	limit := p.o.ConvergenceBound + p.o.Slack
	deadline := time.Now().Add(limit + 10*time.Second)
	for {
		p.mu.Lock()
		leaders := 0
		for _, m := range p.members {
			leaders += len(m.open)
		}
		p.mu.Unlock()
		d := time.Duration(mono() - from)
		if leaders == 1 {
			if d > limit {
				p.violate("exactly one leader only %v after the last pause ended, want within %v + slack %v", d.Round(time.Millisecond), p.o.ConvergenceBound, p.o.Slack)
			}
			return d
		}
		if time.Now().After(deadline) {
			p.violate("%d leaders %v after the last pause ended, want exactly 1 within %v + slack %v", leaders, d.Round(time.Millisecond), p.o.ConvergenceBound, p.o.Slack)
			return d
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// settleLocks waits until every key was taken again after from (progress,
// not speed: within a minute or 20 leases).
func (p *pauseRun) settleLocks(from int64) {
	limit := max(time.Minute, 20*p.o.Timing.LeaseDuration) + p.o.Slack
	deadline := time.Now().Add(limit)
	for {
		p.mu.Lock()
		taken := make([]bool, len(p.names))
		for _, m := range p.members {
			for _, b := range m.beliefs {
				if b.start >= from {
					taken[b.key] = true
				}
			}
		}
		p.mu.Unlock()
		missing := ""
		for k, ok := range taken {
			if !ok {
				missing = p.names[k]
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			p.violate("no progress: no member took %s within %v after the last pause ended", missing, limit)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopAll stops every member gracefully (closing its control pipe) and
// waits until it exited; one that does not within a minute is killed.
func (p *pauseRun) stopAll() {
	p.mu.Lock()
	p.stopAt = mono()
	p.mu.Unlock()
	for _, m := range p.members {
		_ = thaw(m.cmd.Process.Pid)
		_ = m.ctl.Close()
	}
	for _, m := range p.members {
		select {
		case <-m.exited:
		case <-time.After(time.Minute):
			_ = m.cmd.Process.Kill()
			<-m.exited
			p.violate("%s did not stop within a minute of being told to", m.identity)
		}
		<-m.read
		p.mu.Lock()
		stopped := m.stopped
		p.mu.Unlock()
		if m.waitErr != nil || !stopped {
			p.violate("%s exited (%v, stopped %v); its output ends:\n%s", m.identity, m.waitErr, stopped, m.out.String())
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
