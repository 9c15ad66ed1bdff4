package testserver

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rawDo sends one command line (Redis inline, memcached text) over a raw
// connection and returns the first reply line.
func rawDo(t *testing.T, addr, cmd string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("write %q: %v", cmd, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("read reply to %q: %v", cmd, err)
	}
	return strings.TrimSpace(line)
}

func assertRefused(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections", addr)
	}
}

// closeTwice closes s twice and checks that its address refuses
// connections and its directory is gone.
func closeTwice(t *testing.T, s *server) {
	t.Helper()
	addr, dir := s.Addr(), s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	assertRefused(t, addr)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir %s not removed: %v", dir, err)
	}
}

func TestRedisKillRestart(t *testing.T) {
	start := time.Now()
	r := NewRedis(t, RedisOptions{})
	t.Logf("redis started in %v on %s", time.Since(start), r.Addr())
	addr := r.Addr()

	if got := rawDo(t, addr, "PING"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	if got := rawDo(t, addr, "SET k v"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	pid := r.proc.cmd.Process.Pid
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatal("redis alive after Kill")
	}
	assertRefused(t, addr)
	if err := r.Kill(); err != nil { // no-op when not running
		t.Fatal(err)
	}

	start = time.Now()
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("redis restarted in %v", time.Since(start))
	if r.Addr() != addr {
		t.Fatalf("Addr changed: %s -> %s", addr, r.Addr())
	}
	if got := rawDo(t, addr, "PING"); got != "+PONG" {
		t.Fatalf("PING after restart = %q", got)
	}
	if got := rawDo(t, addr, "GET k"); got != "$-1" {
		t.Fatalf("GET k without persistence = %q, want nil", got)
	}

	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, addr)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := rawDo(t, addr, "PING"); got != "+PONG" {
		t.Fatalf("PING after stop/restart = %q", got)
	}

	closeTwice(t, r.server)
	if err := r.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
}

func TestRedisAppendOnlySurvivesKill(t *testing.T) {
	r := NewRedis(t, RedisOptions{AppendOnly: true})
	if got := rawDo(t, r.Addr(), "SET k v"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := rawDo(t, r.Addr(), "GET k"); got != "$1" {
		t.Fatalf("GET k after restart = %q, want $1 (value v)", got)
	}
}

func TestRedisFixedPort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRedis(t, RedisOptions{Port: port})
	if got := rawDo(t, r.Addr(), "PING"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	// A second server on the same port must fail, not reuse the first one.
	if r2, err := StartRedis(RedisOptions{Port: port}); err == nil {
		r2.Close()
		t.Fatal("second redis on a taken port started")
	}
}

func pgSelect1(t *testing.T, dsn string) {
	t.Helper()
	pgDo(t, dsn, func(ctx context.Context, conn *pgx.Conn) {
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v", one, err)
		}
	})
}

func pgExec(t *testing.T, dsn, sql string) {
	t.Helper()
	pgDo(t, dsn, func(ctx context.Context, conn *pgx.Conn) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	})
}

// pgDo runs f on a connection of its own to dsn, within a minute (a
// bound against a hang, not a budget).
func pgDo(t *testing.T, dsn string, f func(context.Context, *pgx.Conn)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	f(ctx, conn)
}

func TestPostgresKillRestart(t *testing.T) {
	start := time.Now()
	p := NewPostgres(t, PostgresOptions{})
	t.Logf("postgres started in %v on %s", time.Since(start), p.Addr())
	addr, dsn := p.Addr(), p.DSN()

	pgSelect1(t, dsn)
	pgExec(t, dsn, "CREATE TABLE t (id int); INSERT INTO t VALUES (1)")

	// Hold an open session so a backend child exists when the server dies.
	ctx := context.Background()
	held, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(ctx)

	postmaster := p.proc.cmd.Process.Pid
	procs := append(descendants(postmaster), postmaster)
	if len(procs) < 5 { // checkpointer, background writer, walwriter, ..., our backend
		t.Fatalf("postgres processes = %v, want the postmaster and its children", procs)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range procs {
		if alive(pid) {
			t.Errorf("postgres process %d alive after Kill", pid)
		}
	}
	assertRefused(t, addr)

	start = time.Now()
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres restarted after kill (crash recovery) in %v", time.Since(start))
	if p.Addr() != addr {
		t.Fatalf("Addr changed: %s -> %s", addr, p.Addr())
	}
	pgSelect1(t, dsn)
	pgExec(t, dsn, "INSERT INTO t VALUES (2)") // the table survived the crash

	start = time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres stopped in %v", time.Since(start))
	assertRefused(t, addr)
	if err := p.Stop(); err != nil { // no-op when not running
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	pgSelect1(t, dsn)

	closeTwice(t, p.server)
}

func TestPostgresRestartWhileRunning(t *testing.T) {
	p := NewPostgres(t, PostgresOptions{})
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	pgSelect1(t, p.DSN())
}

func TestRedisNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartRedis(RedisOptions{})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("StartRedis without redis-server on PATH: %v, want ErrNotInstalled", err)
	}
}

func BenchmarkStartRedis(b *testing.B) {
	for b.Loop() {
		r, err := StartRedis(RedisOptions{})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

func BenchmarkStartPostgres(b *testing.B) {
	for b.Loop() {
		p, err := StartPostgres(PostgresOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
