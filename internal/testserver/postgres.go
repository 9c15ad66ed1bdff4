package testserver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const pgReadyTimeout = 20 * time.Second

// PostgresOptions configures StartPostgres and NewPostgres.
type PostgresOptions struct {
	// Port is the TCP port to listen on; 0 picks a free one.
	Port int
}

// Postgres is a PostgreSQL server child process listening on 127.0.0.1,
// with a fresh cluster whose superuser "postgres" needs no password.
// When the test runs as root the server runs as the "postgres" system user,
// because PostgreSQL refuses to run as root. Its methods are safe for
// concurrent use.
type Postgres struct {
	*server        // dir is the temporary root: data/, sock/, *.log
	bin     string // the postgres binary
	cred    *syscall.Credential
}

// StartPostgres creates a new cluster with initdb in a temporary directory,
// starts postgres on a free loopback port (or opts.Port) and waits until it
// accepts connections. The caller must call Close. It returns an error
// wrapping ErrNotInstalled when initdb or postgres is not found.
func StartPostgres(opts PostgresOptions) (*Postgres, error) {
	binDir, err := findPostgres()
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	p := &Postgres{bin: filepath.Join(binDir, "postgres")}
	p.server = &server{name: "postgres", stopSig: syscall.SIGINT}
	p.server.launch = p.launch
	if os.Geteuid() == 0 {
		if p.cred, err = postgresUser(); err != nil {
			return nil, fmt.Errorf("start postgres: %w", err)
		}
	}
	if p.dir, err = os.MkdirTemp("", "fxelection-pg-*"); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if err = p.initdb(filepath.Join(binDir, "initdb")); err != nil {
		_ = os.RemoveAll(p.dir)
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if err := p.open(opts.Port, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// NewPostgres starts a PostgreSQL server for the test and closes it in
// t.Cleanup. When PostgreSQL is not installed the test is skipped, or fails
// if the environment variable CI is "true". Other startup errors fail the
// test.
func NewPostgres(t testing.TB, opts PostgresOptions) *Postgres {
	t.Helper()
	p, err := StartPostgres(opts)
	return forTest(t, p, err)
}

// DSN returns a connection URL for the superuser "postgres" and database
// "postgres" over TCP, without TLS and password.
func (p *Postgres) DSN() string {
	return "postgres://postgres@" + p.Addr() + "/postgres?sslmode=disable"
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }

// findPostgres returns a directory holding both initdb and postgres: the
// one of postgres on PATH, else the newest /usr/lib/postgresql/*/bin.
func findPostgres() (string, error) {
	var dirs []string
	if bin, err := exec.LookPath("postgres"); err == nil {
		dirs = append(dirs, filepath.Dir(bin))
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(versions) - 1; i >= 0; i-- {
		dirs = append(dirs, versions[i])
	}
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "postgres")) && isExecutable(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: initdb and postgres not on PATH or in /usr/lib/postgresql/*/bin (install them with: apt-get install postgresql)", ErrNotInstalled)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// postgresUser returns the credentials of the "postgres" system user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to run the server: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres uid: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres gid: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// initdb prepares p.dir (traversable by the server user) and creates the
// cluster in its data directory.
func (p *Postgres) initdb(initdb string) error {
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return err
	}
	for _, sub := range []string{"data", "sock"} {
		path := filepath.Join(p.dir, sub)
		if err := os.Mkdir(path, 0o700); err != nil {
			return err
		}
		if p.cred != nil {
			if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
				return err
			}
		}
	}
	logPath := filepath.Join(p.dir, "initdb.log")
	cmd := exec.Command(initdb, "-D", p.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.Dir = p.dir
	proc, err := startProcess(cmd, logPath, p.cred)
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	<-proc.done
	if proc.err != nil {
		return withLog(fmt.Errorf("initdb: %w", proc.err), logPath)
	}
	return nil
}

// launch starts postgres on port and waits until it accepts connections.
func (p *Postgres) launch(port int) (*process, error) {
	cmd := exec.Command(p.bin,
		"-D", p.dataDir(),
		"-p", strconv.Itoa(port),
		"-k", filepath.Join(p.dir, "sock"),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=on", // off would lose commits on Kill (WAL still in shared memory)
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
	)
	return p.run(cmd, port, p.cred, pgReadyTimeout, func(addr string) error {
		if err := p.pidFileReady(cmd.Process.Pid); err != nil {
			return err
		}
		return pgReady(addr)
	})
}

// pidFileReady checks postmaster.pid, as pg_ctl does: it must name our
// process and report status "ready". This also proves the port is ours.
func (p *Postgres) pidFileReady(pid int) error {
	data, err := os.ReadFile(filepath.Join(p.dataDir(), "postmaster.pid"))
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 8 || strings.TrimSpace(lines[0]) != strconv.Itoa(pid) {
		return errors.New("postmaster.pid: not written yet")
	}
	if status := strings.TrimSpace(lines[7]); status != "ready" {
		return fmt.Errorf("postmaster.pid: status %q", status)
	}
	return nil
}

// pgReady opens a protocol v3 session as user postgres and waits for
// ReadyForQuery, which fails while the server is starting up or recovering.
func pgReady(addr string) error {
	conn, err := dial(addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	params := "user\x00postgres\x00database\x00postgres\x00\x00"
	msg := binary.BigEndian.AppendUint32(nil, uint32(8+len(params)))
	msg = binary.BigEndian.AppendUint32(msg, 3<<16) // protocol 3.0
	msg = append(msg, params...)
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	for {
		var header [5]byte // type byte, int32 length including itself
		if _, err := io.ReadFull(br, header[:]); err != nil {
			return err
		}
		size := int(binary.BigEndian.Uint32(header[1:])) - 4
		if size < 0 || size > 1<<16 {
			return fmt.Errorf("bad message length %d", size)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(br, body); err != nil {
			return err
		}
		switch header[0] {
		case 'Z': // ReadyForQuery
			_, _ = conn.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
			return nil
		case 'E': // ErrorResponse, e.g. "the database system is starting up"
			return fmt.Errorf("postgres: %s", pgErrorMessage(body))
		case 'R': // Authentication
			if len(body) < 4 || binary.BigEndian.Uint32(body) != 0 {
				return errors.New("postgres: authentication required")
			}
		}
	}
}

// pgErrorMessage returns the message field of an ErrorResponse body.
func pgErrorMessage(body []byte) string {
	for _, field := range strings.Split(string(body), "\x00") {
		if strings.HasPrefix(field, "M") {
			return field[1:]
		}
	}
	return "unknown error"
}
