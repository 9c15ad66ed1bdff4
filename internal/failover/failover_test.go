package failover

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	cachelease "github.com/fxelection/fxelection/modules/cache"
	natslease "github.com/fxelection/fxelection/modules/cache/nats"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	"github.com/fxelection/fxelection/modules/postgres/pgfence"
	redislease "github.com/fxelection/fxelection/modules/redis"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // every fault makes go-redis log each failed dial
	testserver.Main(m, nil)
}

// quiet is a go-redis logger that drops everything.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// FaultsEnv sets the number of faults of each soak test (default
// soakFaults, or soakFaultsPostgres).
const FaultsEnv = "FXELECTION_FAILOVER_FAULTS"

const (
	soakFaults         = 100 // per class in a soak run: about 2 minutes each
	soakFaultsPostgres = 40  // a standby rebuilt after each: about 4 minutes
	e2eFaults          = 3   // per class in the e2e tier
)

// soakCount is the number of faults a soak test injects: FaultsEnv, or
// def.
func soakCount(t *testing.T, def int) int {
	t.Helper()
	v := os.Getenv(FaultsEnv)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", FaultsEnv, v)
	}
	return n
}

// check fails t on a term that repeated or went back, on an accepted stale
// write and on a refused write of a current leader, and logs the report.
// With lossWindow, stale writes accepted after a fault that could have lost
// the newer term (Report.StaleAfterLoss) are logged instead.
func check(t *testing.T, r *Report, lossWindow bool) {
	t.Helper()
	t.Log(r)
	for _, s := range r.TermRegressions {
		t.Errorf("term repeated or went back: %s", s)
	}
	stale := r.StaleAccepted
	if lossWindow {
		stale = r.StaleUnexplained
		for _, s := range r.StaleAccepted {
			t.Logf("stale write accepted after the fault lost the newer term: %s", s)
		}
	}
	for _, s := range stale {
		t.Errorf("stale write accepted: %s", s)
	}
	for _, s := range r.LiveRefused {
		t.Errorf("a current leader's write refused: %s", s)
	}
	if r.Accepted == 0 {
		t.Error("no guarded write was accepted")
	}
}

// promotionPause is the time between a primary's death and its replica's
// promotion: none for half the faults, up to a lease (2s) for the others,
// as a monitor (Sentinel, Patroni) takes time to decide.
func promotionPause(rng *rand.Rand) time.Duration {
	if rng.IntN(2) == 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(2 * time.Second)))
}

// redisClient is a client of its own on target, as another process's:
// no retries (a retried script could run twice), short timeouts.
func redisClient(t testing.TB, target *Target) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr: target.Addr(), Dialer: target.Dial, ContextTimeoutEnabled: true,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRetries: -1, PoolSize: 4,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisWriter sets the election's data key through redisfence on c.
func redisWriter(c *redis.Client) Writer {
	g := redisfence.New(c, redisfence.Options{})
	return func(ctx context.Context) error {
		tok, err := fence.FromContext(ctx)
		if err != nil {
			return err
		}
		return g.Set(ctx, "data:"+redisfence.HashTag(tok.Election), strconv.FormatUint(tok.Term, 10), 0)
	}
}

// redisCandidate: the Redis backend and a redisfence writer on one client
// of target, the fenced data in the same store as the leases.
func redisCandidate(target *Target) func(t testing.TB) Candidate {
	return func(t testing.TB) Candidate {
		c := redisClient(t, target)
		b, err := redislease.New(c, redislease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return Candidate{Backend: b, Write: redisWriter(c)}
	}
}

// redisReplica: a Redis primary and its replica; each fault kills the
// primary (SIGKILL) and promotes the replica (REPLICAOF NO ONE), then
// moves the clients; the killed server rejoins as a replica.
func redisReplica(faults int) func(t *testing.T) *Report {
	return func(t *testing.T) *Report {
		pair := testserver.NewRedisPair(t)
		target := NewTarget(pair.Primary().Addr())
		return Run(t, Options{
			Class:        "redis: primary killed, replica promoted",
			Faults:       faults,
			NewCandidate: redisCandidate(target),
			Probe:        redisProbe(redisClient(t, target)),
			Inject: func(t testing.TB, rng *rand.Rand) {
				next, err := pair.Failover(promotionPause(rng))
				if err != nil {
					t.Fatal(err)
				}
				target.Set(next.Addr())
			},
			Recover: func(t testing.TB) {
				if err := pair.Rejoin(); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
}

// redisProbe counts with INCR on c.
func redisProbe(c *redis.Client) *Probe {
	return &Probe{
		Incr: func(ctx context.Context) (int64, error) { return c.Incr(ctx, "probe").Result() },
		Read: func(ctx context.Context) (int64, error) {
			n, err := c.Get(ctx, "probe").Int64()
			if errors.Is(err, redis.Nil) {
				return 0, nil
			}
			return n, err
		},
	}
}

// redisRestart: one Redis without persistence, killed and restarted
// empty: leases, term counters and fence keys are all lost.
func redisRestart(faults int, backToBack bool) func(t *testing.T) *Report {
	return func(t *testing.T) *Report {
		srv := testserver.NewRedis(t, testserver.RedisOptions{})
		target := NewTarget(srv.Addr())
		return Run(t, Options{
			Class:        "redis: restarted without persistence" + map[bool]string{true: ", back to back"}[backToBack],
			Faults:       faults,
			BackToBack:   backToBack,
			NewCandidate: redisCandidate(target),
			Inject: func(t testing.TB, _ *rand.Rand) {
				if err := srv.Kill(); err != nil {
					t.Fatal(err)
				}
				if err := srv.Restart(); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
}

// postgresStandby: a PostgreSQL primary and its asynchronous streaming
// standby; each fault kills the primary and promotes the standby, then
// moves the clients; the killed server rejoins as a standby. The fence
// table (pgfence) is in the same database as the leases.
func postgresStandby(faults int) func(t *testing.T) *Report {
	return func(t *testing.T) *Report {
		pair := testserver.NewPostgresPair(t)
		target := NewTarget(pair.Primary().Addr())
		dsn := pair.Primary().DSN()
		guard, err := pgfence.New(pgfence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		setup := pgPool(t, dsn, target)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := guard.CreateTable(ctx, setup); err != nil {
			t.Fatal(err)
		}
		if _, err := setup.Exec(ctx, `CREATE TABLE failover_writes (election text NOT NULL, term bigint NOT NULL);
			CREATE TABLE failover_probe (id int PRIMARY KEY, n bigint NOT NULL);
			INSERT INTO failover_probe VALUES (1, 0)`); err != nil {
			t.Fatal(err)
		}
		probe := pgPool(t, dsn, target)
		return Run(t, Options{
			Class:  "postgres: primary killed, async standby promoted",
			Faults: faults,
			Probe: &Probe{
				Incr: func(ctx context.Context) (n int64, err error) {
					err = probe.QueryRow(ctx, `UPDATE failover_probe SET n = n + 1 WHERE id = 1 RETURNING n`).Scan(&n)
					return n, err
				},
				Read: func(ctx context.Context) (n int64, err error) {
					err = probe.QueryRow(ctx, `SELECT n FROM failover_probe WHERE id = 1`).Scan(&n)
					return n, err
				},
			},
			NewCandidate: func(t testing.TB) Candidate {
				pool := pgPool(t, dsn, target)
				b, err := pglease.New(pool, pglease.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				return Candidate{Backend: b, Write: func(ctx context.Context) error {
					tok, err := fence.FromContext(ctx)
					if err != nil {
						return err
					}
					return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
						if err := guard.Check(ctx, tx); err != nil {
							return err
						}
						_, err := tx.Exec(ctx, `INSERT INTO failover_writes (election, term) VALUES ($1, $2)`, tok.Election, int64(tok.Term))
						return err
					})
				}}
			},
			Inject: func(t testing.TB, rng *rand.Rand) {
				next, err := pair.Failover(promotionPause(rng))
				if err != nil {
					t.Fatal(err)
				}
				target.Set(next.Addr())
			},
			Recover: func(t testing.TB) {
				if err := pair.Rejoin(); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
}

// pgPool is a pool of its own whose connections dial target.
func pgPool(t testing.TB, dsn string, target *Target) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.DialFunc = target.Dial
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// natsKill: one nats-server with JetStream at its default sync interval,
// killed with SIGKILL and restarted on its store. The fenced data is in a
// Redis of its own (no NATS guard exists), which is not faulted.
func natsKill(faults int) func(t *testing.T) *Report {
	return func(t *testing.T) *Report {
		srv := testserver.NewNats(t, testserver.NatsOptions{})
		data := NewTarget(testserver.NewRedis(t, testserver.RedisOptions{}).Addr())
		const bucket = "leases"
		admin := natsConn(t, srv.URL())
		js, err := jetstream.New(admin)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		testserver.WaitFor(t, time.Minute, "the bucket", func() bool {
			_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket})
			return err == nil
		})
		probe, err := jetstream.New(natsConn(t, srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		probeKV, err := probe.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		return Run(t, Options{
			Class:  "nats: server killed (SIGKILL) and restarted, default sync interval",
			Faults: faults,
			Probe: &Probe{
				Incr: func(ctx context.Context) (int64, error) {
					rev, err := probeKV.Put(ctx, "probe", []byte("x"))
					return int64(rev), err
				},
				Read: func(ctx context.Context) (int64, error) {
					e, err := probeKV.Get(ctx, "probe")
					if errors.Is(err, jetstream.ErrKeyNotFound) {
						return 0, nil
					}
					if err != nil {
						return 0, err
					}
					return int64(e.Revision()), nil
				},
			},
			NewCandidate: func(t testing.TB) Candidate {
				nc := natsConn(t, srv.URL())
				js, err := jetstream.New(nc)
				if err != nil {
					t.Fatal(err)
				}
				kv, err := js.KeyValue(ctx, bucket)
				if err != nil {
					t.Fatal(err)
				}
				b, err := natslease.New(kv, nc, cachelease.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				return Candidate{Backend: b, Write: redisWriter(redisClient(t, data))}
			},
			Inject: func(t testing.TB, _ *rand.Rand) {
				if err := srv.Kill(); err != nil {
					t.Fatal(err)
				}
				if err := srv.Restart(); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
}

// natsConn is a connection of its own that keeps reconnecting while the
// server is down.
func natsConn(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url,
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestStoreFaults runs each fault class a few times (the e2e tier).
func TestStoreFaults(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	for name, run := range map[string]func(*testing.T) *Report{
		"RedisReplica":    redisReplica(e2eFaults),
		"RedisRestart":    redisRestart(e2eFaults, false),
		"PostgresStandby": postgresStandby(e2eFaults),
		"NatsKill":        natsKill(e2eFaults),
	} {
		t.Run(name, func(t *testing.T) { check(t, run(t), false) })
	}
}

// TestSoakFailoverRedisReplica: a Redis primary killed and its replica
// promoted, FXELECTION_FAILOVER_FAULTS times (default 100).
func TestSoakFailoverRedisReplica(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	check(t, redisReplica(soakCount(t, soakFaults))(t), false)
}

// TestSoakFailoverRedisRestart: a Redis without persistence killed and
// restarted empty, FXELECTION_FAILOVER_FAULTS times (default 100).
func TestSoakFailoverRedisRestart(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	check(t, redisRestart(soakCount(t, soakFaults), false)(t), false)
}

// TestSoakFailoverRedisRestartBackToBack: as TestSoakFailoverRedisRestart,
// but the next restart may come while a leader deposed by the last one
// still believes it leads: a fence key that the restart emptied of the new
// leader's term then accepts the deposed leader's writes, the window
// redisfence's doc states. Those are logged; any other stale write fails.
func TestSoakFailoverRedisRestartBackToBack(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	check(t, redisRestart(soakCount(t, soakFaults), true)(t), true)
}

// TestSoakFailoverPostgresStandby: a PostgreSQL primary killed and its
// asynchronous standby promoted, FXELECTION_FAILOVER_FAULTS times (default
// 40).
func TestSoakFailoverPostgresStandby(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	check(t, postgresStandby(soakCount(t, soakFaultsPostgres))(t), false)
}

// TestSoakFailoverNatsKill: a nats-server killed with SIGKILL and
// restarted, FXELECTION_FAILOVER_FAULTS times (default 100).
func TestSoakFailoverNatsKill(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	check(t, natsKill(soakCount(t, soakFaults))(t), false)
}

// TestPostgresStandbyEndpoint: a backend pointed at a standby (a reader or
// replica endpoint) cannot lead: the standby refuses the acquire statement
// as a store failure (a read-only transaction), not as a lease held by
// someone else; and what it reads is what it has replayed so far. The
// package doc says never to read leases through one.
func TestPostgresStandbyEndpoint(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	pair := testserver.NewPostgresPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary, err := pglease.New(pgPool(t, pair.Primary().DSN(), NewTarget(pair.Primary().Addr())), pglease.Options{DisablePush: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Close() })
	standby, err := pglease.New(pgPool(t, pair.Standby().DSN(), NewTarget(pair.Standby().Addr())), pglease.Options{DisablePush: true, SkipCreateTable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Close() })
	req := backendkit.AcquireRequest{Election: "standby-endpoint", Identity: "a", Duration: time.Minute, Incarnation: backendkit.NewIncarnation()}
	held, err := primary.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, time.Minute, "the standby to replay the lease", func() bool {
		l, err := standby.Get(ctx, req.Election)
		return err == nil && l.Term == held.Term
	})
	req.Identity, req.Incarnation = "b", backendkit.NewIncarnation()
	_, err = standby.Acquire(ctx, req)
	if err == nil || errors.Is(err, backendkit.ErrLeaseHeld) || !backendkit.IsStoreFailure(err) {
		t.Fatalf("acquire through the standby: %v, want a store failure (read-only transaction)", err)
	}
	if !strings.Contains(err.Error(), "read-only") {
		t.Errorf("acquire through the standby: %v, want the read-only refusal", err)
	}
}

// TestFenceLostWithFailover shows the window the backends' docs state for a
// fencing guard that lives in the failed-over store: a guarded write with
// a newer term, acknowledged by the primary but not yet replicated, is lost
// with the primary, and a writer with an older term is then accepted until
// a write with the newer term comes again. The replica is cut off its
// primary before the newer write (as replication lag would leave it), so
// the loss is certain rather than a race.
func TestFenceLostWithFailover(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	const older, newer = 1000, 2000
	tok := func(ctx context.Context, term uint64) context.Context {
		return fence.WithToken(ctx, fence.Token{Election: "fenced", Term: term})
	}
	// run writes with older, cuts replication, writes with newer, fails
	// over, and then writes with older, newer and older again; it returns
	// the errors of those last three.
	run := func(t *testing.T, write Writer, replicated func(ctx context.Context) bool, cut, failover func(ctx context.Context)) [3]error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := write(tok(ctx, older)); err != nil {
			t.Fatal(err)
		}
		testserver.WaitFor(t, time.Minute, "the older write to reach the replica", func() bool { return replicated(ctx) })
		cut(ctx)
		if err := write(tok(ctx, newer)); err != nil {
			t.Fatal(err)
		}
		if err := write(tok(ctx, older)); !errors.Is(err, fence.ErrStaleTerm) {
			t.Fatalf("older write before the fail-over: %v, want fence.ErrStaleTerm", err)
		}
		failover(ctx)
		var errs [3]error
		for i, term := range []uint64{older, newer, older} {
			testserver.WaitFor(t, time.Minute, "the new primary", func() bool {
				errs[i] = write(tok(ctx, term))
				return errs[i] == nil || errors.Is(errs[i], fence.ErrStaleTerm)
			})
		}
		return errs
	}
	check := func(t *testing.T, errs [3]error) {
		t.Helper()
		if errs[0] != nil {
			t.Errorf("older write after the fail-over: %v; the docs say it is accepted (the newer term was lost)", errs[0])
		}
		if errs[1] != nil {
			t.Errorf("newer write after the fail-over: %v", errs[1])
		}
		if !errors.Is(errs[2], fence.ErrStaleTerm) {
			t.Errorf("older write after the newer one: %v, want fence.ErrStaleTerm", errs[2])
		}
	}

	t.Run("Redis", func(t *testing.T) {
		pair := testserver.NewRedisPair(t)
		target := NewTarget(pair.Primary().Addr())
		c := redisClient(t, target)
		g := redisfence.New(c, redisfence.Options{})
		replica := redis.NewClient(&redis.Options{Addr: pair.Replica().Addr()})
		t.Cleanup(func() { _ = replica.Close() })
		errs := run(t, redisWriter(c),
			func(ctx context.Context) bool {
				v, err := replica.Get(ctx, g.FenceKey("fenced")).Result()
				return err == nil && v == strconv.Itoa(older)
			},
			func(ctx context.Context) { // the replica follows a server that is not there
				host, port, _ := strings.Cut(testserver.ClosedAddr(t), ":")
				if err := replica.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
					t.Fatal(err)
				}
			},
			func(ctx context.Context) {
				next, err := pair.Failover(0)
				if err != nil {
					t.Fatal(err)
				}
				target.Set(next.Addr())
			})
		check(t, errs)
	})

	t.Run("Postgres", func(t *testing.T) {
		pair := testserver.NewPostgresPair(t)
		target := NewTarget(pair.Primary().Addr())
		pool := pgPool(t, pair.Primary().DSN(), target)
		standby := pgPool(t, pair.Standby().DSN(), NewTarget(pair.Standby().Addr()))
		guard, err := pgfence.New(pgfence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := guard.CreateTable(ctx, pool); err != nil {
			t.Fatal(err)
		}
		write := func(ctx context.Context) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return guard.Check(ctx, tx) })
		}
		errs := run(t, write,
			func(ctx context.Context) bool {
				var term int64
				err := standby.QueryRow(ctx, `SELECT term FROM fxelection_fence WHERE election = 'fenced'`).Scan(&term)
				return err == nil && term == older
			},
			func(ctx context.Context) { // end the walsender: the standby retries after wal_retrieve_retry_interval (5s)
				var n int
				if err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_replication`).Scan(&n); err != nil || n != 1 {
					t.Fatalf("end the walsender: %d, %v", n, err)
				}
			},
			func(ctx context.Context) {
				next, err := pair.Failover(0)
				if err != nil {
					t.Fatal(err)
				}
				target.Set(next.Addr())
			})
		check(t, errs)
	})
}
