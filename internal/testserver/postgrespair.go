package testserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PostgresPair is a PostgreSQL primary and an asynchronous streaming
// standby of it, each a postgres child on a loopback port of its own: the
// standby is made with pg_basebackup -R (standby.signal and
// primary_conninfo), and no synchronous_standby_names is set, so the
// primary acknowledges a commit before the standby has it, as in a default
// streaming-replication setup. Failover kills the primary and promotes the
// standby (pg_ctl promote); Rejoin makes the killed server a standby of the
// new primary again (a fresh pg_basebackup into its emptied data
// directory), so the two trade places. Its methods are safe for concurrent
// use, but Failover and Rejoin must alternate.
type PostgresPair struct {
	mu      sync.Mutex
	primary *Postgres
	standby *Postgres
	down    bool // the standby slot holds the killed former primary, not yet rejoined
}

// StartPostgresPair starts a primary and a standby streaming from it. The
// caller must call Close.
func StartPostgresPair() (*PostgresPair, error) {
	primary, err := StartPostgres(PostgresOptions{})
	if err != nil {
		return nil, err
	}
	standby, err := startStandby(primary)
	if err != nil {
		return nil, errors.Join(err, primary.Close())
	}
	return &PostgresPair{primary: primary, standby: standby}, nil
}

// NewPostgresPair starts a PostgresPair for the test and closes it in
// t.Cleanup, skipping the test as NewPostgres does when PostgreSQL is
// missing.
func NewPostgresPair(t testing.TB) *PostgresPair {
	t.Helper()
	p, err := StartPostgresPair()
	return forTest(t, p, err)
}

// Primary returns the server that currently takes writes.
func (p *PostgresPair) Primary() *Postgres {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.primary
}

// Standby returns the server that currently streams from the primary (or,
// between Failover and Rejoin, the killed former primary).
func (p *PostgresPair) Standby() *Postgres {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.standby
}

// Failover kills the primary (the postmaster and every backend, SIGKILL:
// commits it had acknowledged but not yet streamed are lost, as in a real
// crash) and, pause later (a monitor's detection time), promotes the
// standby with pg_ctl promote, waiting until it takes writes. It returns the new primary; clients must be moved to its
// address. The killed server stays down until Rejoin.
func (p *PostgresPair) Failover(pause time.Duration) (*Postgres, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return nil, errors.New("postgres failover: the standby has not rejoined since the last failover")
	}
	if err := p.primary.Kill(); err != nil {
		return nil, fmt.Errorf("postgres failover: %w", err)
	}
	time.Sleep(pause)
	if err := p.standby.promote(); err != nil {
		return nil, fmt.Errorf("postgres failover: %w", err)
	}
	p.primary, p.standby, p.down = p.standby, p.primary, true
	return p.primary, nil
}

// Rejoin empties the data directory of the server killed by the last
// Failover, fills it with a pg_basebackup -R of the new primary and starts
// it on its own port as the new primary's standby.
func (p *PostgresPair) Rejoin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down {
		return errors.New("postgres rejoin: no failover to rejoin from")
	}
	if err := p.standby.Kill(); err != nil {
		return fmt.Errorf("postgres rejoin: %w", err)
	}
	if err := p.standby.baseBackup(p.primary); err != nil {
		return fmt.Errorf("postgres rejoin: %w", err)
	}
	if err := p.standby.Restart(); err != nil {
		return fmt.Errorf("postgres rejoin: %w", err)
	}
	p.down = false
	return nil
}

// Close kills both servers and removes their directories.
func (p *PostgresPair) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.standby.Close(), p.primary.Close())
}

// startStandby makes a new server directory, fills its data directory with
// a pg_basebackup -R of primary and starts it on a free port.
func startStandby(primary *Postgres) (*Postgres, error) {
	s := &Postgres{bin: primary.bin, cred: primary.cred}
	s.server = &server{name: "postgres", stopSig: syscall.SIGINT}
	s.server.launch = s.launch
	var err error
	if s.dir, err = os.MkdirTemp("", "fxelection-pg-standby-*"); err != nil {
		return nil, fmt.Errorf("start postgres standby: %w", err)
	}
	if err := os.Chmod(s.dir, 0o755); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, fmt.Errorf("start postgres standby: %w", err)
	}
	if err := s.baseBackup(primary); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, fmt.Errorf("start postgres standby: %w", err)
	}
	if err := s.open(0, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// baseBackup replaces the data directory of a stopped server with a
// pg_basebackup of primary, streaming its WAL (-X stream), with
// standby.signal and primary_conninfo written (-R), so the server starts
// as primary's standby.
func (p *Postgres) baseBackup(primary *Postgres) error {
	for _, sub := range []string{"data", "sock"} {
		path := filepath.Join(p.dir, sub)
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		if err := os.Mkdir(path, 0o700); err != nil {
			return err
		}
		if p.cred != nil {
			if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
				return err
			}
		}
	}
	host, port := "127.0.0.1", primary.Addr()[len("127.0.0.1:"):]
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("primary address %s", primary.Addr())
	}
	return p.runTool("pg_basebackup", "-h", host, "-p", port, "-U", "postgres",
		"-D", p.dataDir(), "-R", "-X", "stream", "-c", "fast", "--no-sync")
}

// promote promotes a standby with pg_ctl promote -w, which returns once the
// server has left recovery and takes writes.
func (p *Postgres) promote() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return errors.New("promote: server not running")
	}
	return p.runTool("pg_ctl", "promote", "-D", p.dataDir(), "-w", "-t", "60")
}

// runTool runs one of PostgreSQL's programs from the server binary's
// directory (after symbolic links) as the server's user, with its output in TOOL.log, and waits
// for it.
func (p *Postgres) runTool(tool string, args ...string) error {
	logPath := filepath.Join(p.dir, tool+".log")
	_ = os.Remove(logPath)
	dir := filepath.Dir(p.bin)
	if real, err := filepath.EvalSymlinks(p.bin); err == nil {
		dir = filepath.Dir(real) // /usr/local/bin/postgres may link to the full installation
	}
	cmd := exec.Command(filepath.Join(dir, tool), args...)
	cmd.Dir = p.dir
	proc, err := startProcess(cmd, logPath, p.cred)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	<-proc.done
	if proc.err != nil {
		return withLog(fmt.Errorf("%s: %w", tool, proc.err), logPath)
	}
	return nil
}
