package configs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/moduletest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	_ "github.com/fxelection/fxelection/modules/blob"
	_ "github.com/fxelection/fxelection/modules/cache/memcached"
	_ "github.com/fxelection/fxelection/modules/cache/nats"
	_ "github.com/fxelection/fxelection/modules/postgres"
	_ "github.com/fxelection/fxelection/modules/redis"
	_ "github.com/fxelection/fxelection/modules/s3"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dummyEnv and dummyFiles resolve every placeholder the files use, with
// values of the right shape.
var (
	dummyEnv = map[string]string{
		"REDIS_ADDR":                      "127.0.0.1:6379",
		"MEMCACHED_ADDR":                  "127.0.0.1:11211",
		"NATS_URL":                        "nats://127.0.0.1:4222",
		"NATS_PASSWORD":                   "dummy-password",
		"REDIS_PASSWORD":                  "dummy-password",
		"DATABASE_URL":                    "postgres://app:dummy-password@db.internal:5432/app?sslmode=require",
		"S3_ACCESS_KEY":                   "dummy-access-key",
		"S3_SECRET_KEY":                   "dummy-secret-key",
		"AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=dummy;AccountKey=ZHVtbXkta2V5;EndpointSuffix=core.windows.net",
	}
	dummyFiles = map[string]string{
		"/run/secrets/fxelection_pg_dsn": "postgres://app:dummy-password@db.internal:5432/app?sslmode=require",
	}
)

func loader(env, files map[string]string) config.Loader {
	return config.Loader{
		LookupEnv: func(name string) (string, bool) {
			v, ok := env[name]
			return v, ok
		},
		ReadFile: func(path string) ([]byte, error) {
			if v, ok := files[path]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		},
	}
}

// elsewhere are the files whose modules live in another Go module, whose
// tests check them.
var elsewhere = map[string]bool{
	"etcd.json":      true, // modules/etcd's TestExampleConfig
	"zookeeper.json": true, // modules/zookeeper's TestExampleConfig
}

// files returns the example files this package checks.
func files(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob("*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no example files: %v", err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return elsewhere[n] })
}

// TestEveryFileParses: every example is a valid document (strict decoding,
// every module's Validate) once its placeholders resolve.
func TestEveryFileParses(t *testing.T) {
	for _, name := range files(t) {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := loader(dummyEnv, dummyFiles).Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// The file named after a module uses that module.
		want := modkit.ModuleID(modkit.BackendsNamespace + "." + strings.TrimSuffix(name, ".json"))
		if _, err := modkit.GetModule(want); err != nil {
			continue // not named after a module (elections.json)
		}
		used := false
		for _, e := range doc.Elections {
			ref := e.Backend
			if ref.Use != "" {
				ref = doc.Backends[ref.Use]
			}
			used = used || ref.Module.ElectionModule().ID == want
		}
		if !used {
			t.Errorf("%s does not use %s", name, want)
		}
	}
}

// TestSecretsArePlaceholders: a file does not parse without its
// placeholders' values, so no secret is written in it.
func TestSecretsArePlaceholders(t *testing.T) {
	for _, name := range []string{"redis.json", "postgres.json", "s3.json", "blob.json", "nats.json", "elections.json"} {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := loader(nil, nil).Parse(raw); !errors.Is(err, config.ErrPlaceholder) {
			t.Errorf("%s parses without placeholder values: %v", name, err)
		}
	}
}

// TestEveryBackendHasAFile: each backend module this repository registers
// has an example.
func TestEveryBackendHasAFile(t *testing.T) {
	for _, m := range modkit.Modules() {
		if m.ID.Namespace() != modkit.BackendsNamespace {
			continue
		}
		if _, err := os.Stat(m.ID.Name() + ".json"); err != nil {
			t.Errorf("no example for %s: %v", m.ID, err)
		}
	}
}

// run loads name with l, runs it as an fx app until every election has a
// leader, stops it, and checks every lease was released.
func run(t *testing.T, name string, l config.Loader) {
	t.Helper()
	moduletest.RunConfigFile(t, l, name, 30*time.Second)
}

func TestMemoryRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	run(t, "memory.json", loader(nil, nil))
}

func TestRedisRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewRedis(t, testserver.RedisOptions{})
	run(t, "redis.json", loader(map[string]string{"REDIS_ADDR": srv.Addr(), "REDIS_PASSWORD": ""}, nil))
}

func TestPostgresRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewPostgres(t, testserver.PostgresOptions{})
	run(t, "postgres.json", loader(nil, map[string]string{"/run/secrets/fxelection_pg_dsn": srv.DSN() + "\n"}))
}
