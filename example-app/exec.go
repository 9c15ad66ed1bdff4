package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/proctree"
)

// "example-app exec [flags] -- CMD [ARGS…]" runs CMD only while this
// process leads its one election (the help text of "exec" states the rules
// to users; this file keeps them).

const (
	// minKillMargin is the least time kept between the end of
	// --kill-after and the earliest moment another candidate can take the
	// lease: for noticing the step-down, the child's exit after SIGKILL
	// and clock-rate drift.
	minKillMargin = 100 * time.Millisecond
	// Restart backoff: the wait before restarting a child that exited
	// doubles from restartBackoffBase per exit in a row, up to
	// restartBackoffMax (each jittered up to 20%); a child that ran
	// restartBackoffMax or longer starts the count again.
	restartBackoffBase = 100 * time.Millisecond
	restartBackoffMax  = 10 * time.Second
	// treeGoneWait bounds the wait for the child's process tree to
	// disappear after SIGKILL (a process in uninterruptible sleep dies
	// only when it wakes); treePoll is how often the tree is checked once
	// the child has exited.
	treeGoneWait = 5 * time.Second
	treePoll     = 10 * time.Millisecond
	// startFailedCode is the exit code of a child that could not be
	// started, as a shell reports a command it cannot run.
	startFailedCode = 127
	// exitOnLossCode is the exit code after a lost leadership of an
	// election with exit_on_loss, as "run" exits.
	exitOnLossCode = 1
)

// restartPolicies are --restart's choices.
func restartPolicies() []string { return []string{"never", "on-failure", "always"} }

// forwardedSignals are passed on to the child's process tree while it
// runs; stopSignal tells which of them also stop the command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func stopSignal(sig os.Signal) bool { return sig == syscall.SIGINT || sig == syscall.SIGTERM }

// heldSignals are the job-control signals that would stop this process
// (Ctrl-Z, a background read or write on the terminal): a stopped command
// cannot stop its child when its leadership ends, so they are caught and
// dropped, with a log line. Caught, not ignored: an ignored signal would
// stay ignored in the child.
var heldSignals = []os.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU}

func heldSignal(sig os.Signal) bool {
	return sig == syscall.SIGTSTP || sig == syscall.SIGTTIN || sig == syscall.SIGTTOU
}

// execCommand is exec's command: the arguments after "--" (rest is what
// the flag package left of args).
func execCommand(args, rest []string) ([]string, error) {
	i := len(args) - len(rest)
	switch {
	case len(rest) > 0 && (i == 0 || args[i-1] != "--"):
		return nil, usagef("exec: put -- before the command (got %s)", show(rest[0]))
	case len(rest) == 0:
		return nil, usagef("exec needs a command after --: example-app exec [flags] -- CMD [ARGS…]")
	}
	return rest, nil
}

// killAfterLimit is the longest grace exec gives a child between SIGTERM
// and SIGKILL in an election with these timings, and the margin it keeps.
// A leader steps down RenewDeadline after the start of its last successful
// renewal, and no other candidate can take the lease before LeaseDuration
// after that start (the store counts from when it received the renewal,
// later still); the child must be gone in between. The margin is a tenth
// of that window, at least minKillMargin.
func killAfterLimit(lease, renewDeadline time.Duration) (limit, margin time.Duration) {
	window := lease - renewDeadline
	margin = max(window/10, minKillMargin)
	return window - margin, margin
}

// checkKillAfter refuses timings that leave a child no time to stop, and a
// --kill-after longer than their limit. what names the window in messages.
func (o options) checkKillAfter(lease, renewDeadline time.Duration, what string) error {
	limit, margin := killAfterLimit(lease, renewDeadline)
	if limit < 0 {
		return usagef("exec: %s (%v) must be more than %v: the child needs time to stop before another candidate can take the lease", what, lease-renewDeadline, minKillMargin)
	}
	if o.given["kill-after"] && o.killAfter > limit {
		return usagef("%s (%v) must be at most %v for exec: %s (%v) less a margin of %v", o.label("kill-after"), o.killAfter, limit, what, lease-renewDeadline, margin)
	}
	return nil
}

// runExec is "example-app exec": the one election of the flags (or the
// --config document's election --election names) runs as runFlags and
// runConfig run theirs, with a supervisor instead of the example's leader
// work. It returns the exit code: the last child's, 0 if none ended the
// command.
func runExec(o options, log *slog.Logger, stdout, stderr io.Writer) (code int, err error) {
	if _, err := exec.LookPath(o.argv[0]); err != nil {
		return 0, usagef("exec: %s is not a command found in PATH or an executable file", show(o.argv[0]))
	}
	// From here the signals are the supervisor's to forward.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append(slices.Clone(forwardedSignals), heldSignals...)...)
	defer signal.Stop(sigs)
	contain(log)

	doc, startProblem, what, docEnv, err := o.execDocument()
	if err != nil {
		return 0, err
	}
	s := &supervisor{argv: o.argv, env: childEnv(os.Environ(), o, docEnv), restart: o.restart, log: log, sigs: sigs, stdout: stdout, stderr: stderr}
	o.adminAddr = "" // exec runs one election, not a reloadable document
	err = runDocument(context.Background(), doc, o, log, startProblem, docWork{
		// The timings are checked against --kill-after before the
		// elector starts: a refused elector never campaigns.
		attach: func(e *fxelection.Elector) (func(), error) {
			c := e.Config()
			if err := o.checkKillAfter(c.LeaseDuration, c.RenewDeadline, what); err != nil {
				return nil, err
			}
			s.e, s.killAfter = e, o.killAfter
			if !o.given["kill-after"] {
				s.killAfter, _ = killAfterLimit(c.LeaseDuration, c.RenewDeadline)
			}
			// A resignation (a failing health check) releases the lease
			// StopTimeout after leader work is told to stop, child gone
			// or not.
			if s.killAfter > c.StopTimeout {
				return nil, usagef("exec: the kill-after grace (%v) must be at most the stop timeout (%v): a resignation releases the lease that long after the child gets SIGTERM", s.killAfter, c.StopTimeout)
			}
			return nil, nil
		},
		run: func() error {
			code = s.run()
			return nil
		},
	})
	return code, err
}

// contain makes this process the keeper of its children's processes: a
// child subreaper, so that what a child leaves behind (a daemon, a
// setsid'd process) is re-parented here, where the supervisor finds, kills
// and reaps it; and not dumpable, so that a child of the same uid cannot
// read this process's environment (its secrets) in /proc. Where the
// system has neither (not Linux) the child's process group is all exec
// contains.
func contain(log *slog.Logger) {
	for _, c := range []struct {
		what string
		set  func() error
	}{{"a child subreaper", proctree.Subreaper}, {"not dumpable", proctree.NotDumpable}} {
		if err := c.set(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			log.Warn("exec: cannot make this process "+c.what, "error", err.Error())
		}
	}
}

// execDocument is the document exec runs (one election), how to report a
// start error, what names its lease window in messages, and the
// environment variables the document's {env.NAME} placeholders read.
func (o options) execDocument() (doc *config.Document, startProblem func(error) error, what string, env []string, err error) {
	if o.configFile == "" {
		doc, err = o.flagsDocument()
		return doc, o.provisionProblem, "--lease − --renew-deadline", nil, err
	}
	raw, full, err := loadConfig(o)
	if err != nil {
		return nil, nil, "", nil, err
	}
	doc, i, err := o.pickElection(full)
	if err != nil {
		return nil, nil, "", nil, err
	}
	what = fmt.Sprintf("%s: elections[%d] lease_duration − renew_deadline", o.configFile, i)
	// The election runs alone, as the document's elections[0]: errors
	// naming a path say which one it is.
	startProblem = func(err error) error {
		return fmt.Errorf("%s: elections[%d] (run alone as elections[0]): %w", o.configFile, i, err)
	}
	return doc, startProblem, what, placeholderEnv(raw), nil
}

// envPlaceholder is a {env.NAME} placeholder as a document spells it.
var envPlaceholder = regexp.MustCompile(`\{env\.([A-Za-z_][A-Za-z0-9_]*)\}`)

// placeholderEnv are the variables raw's {env.NAME} placeholders name.
func placeholderEnv(raw []byte) []string {
	var names []string
	for _, m := range envPlaceholder.FindAllSubmatch(raw, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// pickElection is doc with only the election exec runs (the one named by
// --election; without it, the only one) and the shared backend it uses, and
// that election's index in doc: none of the document's pools and lockers,
// whose leases would be held by a process that is there for one election.
func (o options) pickElection(doc *config.Document) (*config.Document, int, error) {
	i := -1
	if !o.given["election"] {
		if len(doc.Elections) != 1 {
			return nil, 0, usagef("--election is required for exec: %s describes %d elections", o.configFile, len(doc.Elections))
		}
		i = 0
	}
	for j, e := range doc.Elections {
		if o.given["election"] && e.Name == o.election {
			if i >= 0 {
				return nil, 0, usagef("%s: %s names elections[%d] and elections[%d]: exec runs one", o.label("election"), o.configFile, i, j)
			}
			i = j
		}
	}
	if i < 0 {
		return nil, 0, usagef("%s: %s has no election of that name", o.label("election"), o.configFile)
	}
	one := *doc
	one.Elections = []config.Election{doc.Elections[i]}
	one.Pools, one.Lockers = nil, nil
	one.Backends = nil
	if use := doc.Elections[i].Backend.Use; use != "" {
		one.Backends = map[string]modkit.BackendRef{use: doc.Backends[use]}
	}
	return &one, i, nil
}

// childEnv is the child's environment but for the three FXELECTION_
// variables of its leadership: this process's, without the secrets this
// command used: the FXELECTION_ variables that set its flags (they hold
// passwords and connection strings, and configure this command, not the
// child), the variables docEnv names (its document's {env.NAME}
// placeholders), and any variable whose value is a secret flag's.
func childEnv(environ []string, o options, docEnv []string) []string {
	drop := map[string]bool{"FXELECTION_IDENTITY": true, "FXELECTION_TERM": true}
	for _, d := range o.flagTable() {
		drop[envName(d.name)] = true
	}
	for _, name := range docEnv {
		drop[name] = true
	}
	secret := map[string]bool{}
	for _, v := range o.secrets() {
		if v != "" {
			secret[v] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, val, _ := strings.Cut(kv, "=")
		return drop[name] || secret[val]
	})
}

// supervisor runs the child while its elector leads. The goroutine that
// calls run owns everything here: the child, its process tree and the
// signals.
type supervisor struct {
	e              *fxelection.Elector
	argv           []string
	env            []string
	killAfter      time.Duration
	restart        string
	log            *slog.Logger
	sigs           <-chan os.Signal
	stdout, stderr io.Writer
}

// ending is how a child's run (or a leadership's) ended.
type ending int

const (
	running ending = iota
	lost           // the leadership ended: campaign again
	stopped        // SIGINT or SIGTERM: stop the command
	exited         // the child exited while leader
)

// run campaigns until the command is to end, running the child in every
// leadership, and returns the exit code: the child's when its exit (and
// --restart) or a stop signal ended the command while it ran, 0 when a
// signal stopped a follower, the last child's when the elector stopped
// campaigning after a loss (no_recampaign); and exitOnLossCode when a
// leadership of an election with exit_on_loss ended (as "run" exits), once
// the child is gone. Between leaderships whatever is left of a health
// command (a process that dropped its tree's mark) is killed and reaped.
func (s *supervisor) run() int {
	leading := make(chan struct{}, 1)
	remove := s.e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if ev.Kind == fxelection.EventStartedLeading {
			select {
			case leading <- struct{}{}:
			default:
			}
		}
	}))
	defer remove()
	// Observers' events may be dropped under load: look every RetryPeriod
	// too.
	poll := time.NewTicker(s.e.Config().RetryPeriod)
	defer poll.Stop()
	last := 0 // the code of the last child a lost leadership stopped
	for {
		end, code, led := lost, last, false
		_, _ = s.e.RunIfLeader(context.Background(), func(ctx context.Context) error {
			led = true
			end, code = s.lead(ctx)
			return nil
		})
		if end != lost {
			return code
		}
		last = code
		if led && s.e.Config().ExitOnLoss {
			s.log.Warn("leadership ended and exit_on_loss is set: exiting", "election", s.e.Status().Election, "code", exitOnLossCode)
			return exitOnLossCode
		}
		if !s.e.Status().Running {
			// It campaigns no more (no_recampaign after a loss): it
			// would never run the child again.
			s.log.Info("no longer campaigning: exiting", "election", s.e.Status().Election, "code", last)
			return last
		}
		proctree.KillOrphans()
		select {
		case <-leading:
		case <-poll.C:
		case sig := <-s.sigs:
			if stopSignal(sig) {
				return 0
			}
			s.held(sig)
		}
	}
}

// lead runs the child, restarting it as --restart says, until the
// leadership (ctx) ends, a signal stops the command or the child's exit
// ends it; it returns only once the child's process tree is gone.
func (s *supervisor) lead(ctx context.Context) (ending, int) {
	lease, _ := fxelection.LeaseFromContext(ctx)
	exits := 0
	for {
		began := time.Now()
		end, code := s.runChild(ctx, lease)
		if end != exited || s.restart == "never" || s.restart == "on-failure" && code == 0 {
			return end, code
		}
		if time.Since(began) >= restartBackoffMax {
			exits = 0
		}
		exits++
		wait := backoff.Delay(exits, restartBackoffBase, restartBackoffMax)
		s.log.Info("child restart", s.attrs(lease, "code", code, "in", wait.String())...)
		switch s.sleep(ctx, wait) {
		case stopped:
			return stopped, 0 // a signal stopped the command with no child running
		case lost:
			return lost, code
		}
	}
}

// sleep waits d; it ends early when the leadership ends or a signal stops
// the command (no child runs: other signals are dropped).
func (s *supervisor) sleep(ctx context.Context, d time.Duration) ending {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return running
		case <-ctx.Done():
			return lost
		case sig := <-s.sigs:
			if stopSignal(sig) {
				return stopped
			}
			s.held(sig)
		}
	}
}

// held logs a job-control signal the command drops (heldSignals).
func (s *supervisor) held(sig os.Signal) {
	if heldSignal(sig) {
		s.log.Warn("signal ignored: a stopped command could not stop its child", "signal", signalName(sig.(syscall.Signal)))
	}
}

// runChild runs the child once for lease and returns how it ended and its
// exit code (128+N when signal N ended it), once its process tree is gone:
// its process group, its descendants, and every process it left behind
// (re-parented to this process, a subreaper; see contain and package
// proctree). On the leadership's end (ctx) the tree gets SIGTERM at once;
// on a stop signal, that signal; either way SIGKILL killAfter later.
func (s *supervisor) runChild(ctx context.Context, lease fxelection.Lease) (ending, int) {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = append(slices.Clone(s.env),
		"FXELECTION_ELECTION="+lease.Election, "FXELECTION_IDENTITY="+lease.Holder, "FXELECTION_TERM="+strconv.FormatUint(lease.Term, 10))
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	// SIGKILL if this process dies (start keeps the thread that delivers
	// it alive); the tree leads its own process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	tree := proctree.Command(cmd, proctree.Options{Orphans: true})
	done, err := start(tree)
	if err != nil {
		s.log.Warn("child not started", s.attrs(lease, "error", oneLine(err.Error()))...)
		return exited, startFailedCode
	}
	pid := tree.Pid()
	s.log.Info("child started", s.attrs(lease, "pid", pid)...)

	// Processes re-parented here that exit while the child runs are
	// reaped every RetryPeriod (this process may be a container's PID 1).
	reap := time.NewTicker(s.e.Config().RetryPeriod)
	defer reap.Stop()
	end := running
	leadership := ctx.Done()
	var killAt time.Time // when SIGKILL is due (zero: no signal to end it sent)
	var kill *time.Timer
	killSent := false
	defer func() {
		if kill != nil {
			kill.Stop()
		}
	}()
	stopChild := func(e ending, sig syscall.Signal, reason string) {
		end = e
		s.signal(lease, tree, sig, reason)
		if kill == nil {
			killAt, kill = time.Now().Add(s.killAfter), time.NewTimer(s.killAfter)
		}
	}
	for {
		var killC <-chan time.Time
		if kill != nil && !killSent {
			killC = kill.C
		}
		select {
		case err := <-done:
			_ = err // the exit status is in cmd.ProcessState
			code := exitCode(cmd.ProcessState)
			s.log.Info("child exited", s.attrs(lease, "pid", pid, "code", code)...)
			s.reapTree(lease, tree, killAt, killSent)
			if end == running {
				end = exited
			}
			return end, code
		case <-leadership:
			leadership = nil
			if end == running {
				stopChild(lost, syscall.SIGTERM, "leadership ended")
			}
		case sig := <-s.sigs:
			ss, _ := sig.(syscall.Signal)
			switch {
			case heldSignal(sig):
				s.held(sig)
			case stopSignal(sig) && end != stopped:
				stopChild(stopped, ss, "forwarded; stopping")
			default:
				s.signal(lease, tree, ss, "forwarded")
			}
		case <-killC:
			killSent = true
			s.signal(lease, tree, syscall.SIGKILL, "kill-after passed")
		case <-reap.C:
			proctree.Reap()
		}
	}
}

// reapTree returns once no process of the child's tree is left (zombies
// re-parented here reaped), the child having exited: the rest get SIGTERM
// (unless the tree had its signal already: killAt is set) and SIGKILL at
// killAt. It gives up, logging it, treeGoneWait after SIGKILL.
func (s *supervisor) reapTree(lease fxelection.Lease, tree *proctree.Tree, killAt time.Time, killSent bool) {
	if !tree.Alive() {
		return
	}
	if killAt.IsZero() {
		s.signal(lease, tree, syscall.SIGTERM, "child exited, processes it started live on")
		killAt = time.Now().Add(s.killAfter)
	}
	for tree.Alive() {
		now := time.Now()
		switch {
		case !killSent && !now.Before(killAt):
			killSent = true
			s.signal(lease, tree, syscall.SIGKILL, "kill-after passed")
		case now.After(killAt.Add(treeGoneWait)):
			s.log.Warn("child's processes still there after SIGKILL", s.attrs(lease, "pid", tree.Pid())...)
			return
		}
		time.Sleep(treePoll)
	}
}

// signal sends sig to the child's tree and logs it.
func (s *supervisor) signal(lease fxelection.Lease, tree *proctree.Tree, sig syscall.Signal, reason string) {
	err := tree.Signal(sig)
	attrs := s.attrs(lease, "pid", tree.Pid(), "signal", signalName(sig), "reason", reason)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		s.log.Warn("child not signalled", append(attrs, "error", err.Error())...)
		return
	}
	s.log.Info("child signalled", attrs...)
}

// signalName is sig's name as kill -l spells it ("SIGTERM").
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGKILL: "SIGKILL"}
	if n, ok := names[sig]; ok {
		return n
	}
	return sig.String()
}

// attrs are a log line's attributes for lease, then more.
func (s *supervisor) attrs(lease fxelection.Lease, more ...any) []any {
	return append([]any{"election", lease.Election, "identity", lease.Holder, "term", lease.Term}, more...)
}

// start starts tree's command from a goroutine locked to its OS thread until cmd has
// exited: the kernel sends Pdeathsig when the thread that started the
// child ends, so this keeps it from ending before the child (the Go
// runtime may otherwise retire an idle thread), and the child still gets
// its SIGKILL when this process dies, even by SIGKILL. done receives
// Wait's result.
func start(tree *proctree.Tree) (done <-chan error, err error) {
	started, waited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := tree.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- tree.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
}

// exitCode is a finished child's exit code, 128+N when signal N ended it
// (as shells report it).
func exitCode(st *os.ProcessState) int {
	if st == nil {
		return startFailedCode
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := st.ExitCode(); code >= 0 {
		return code
	}
	return 1
}
