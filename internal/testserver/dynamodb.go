package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// DynamoDBSimulatorVersion is the npm package amplify-dynamodb-simulator
// the project tests against: it ships AWS's own DynamoDB Local (1.25.1).
const DynamoDBSimulatorVersion = "2.9.30"

// DynamoDBInstall is the command, run in the repository root, that
// installs DynamoDB Local where this package looks for it.
const DynamoDBInstall = "npm install --no-audit --no-fund --prefix .cache/dynamodb amplify-dynamodb-simulator@" +
	DynamoDBSimulatorVersion + " (in the repository root, or ./scripts/test.sh; Java 17 on PATH; or set " +
	DynamoDBEnv + " to a directory holding DynamoDBLocal.jar and DynamoDBLocal_lib)"

// DynamoDBEnv names the environment variable that points at a directory
// holding DynamoDBLocal.jar and DynamoDBLocal_lib, overriding the
// project-local install.
const DynamoDBEnv = "FXELECTION_DYNAMODB_LOCAL"

// dynamoDBEmulator is where the npm package keeps the jar, under
// .cache/dynamodb.
var dynamoDBEmulator = filepath.Join("node_modules", "amplify-dynamodb-simulator", "emulator")

// The Java virtual machine starts slowly on a loaded machine.
const dynamoDBReadyTimeout = 90 * time.Second

// DynamoDBOptions configures StartDynamoDB and NewDynamoDB.
type DynamoDBOptions struct {
	// Port is the port; 0 picks a free one.
	Port int
	// InMemory keeps the tables in memory only: Restart starts empty.
	// Default: tables in a file in the server's temporary directory, which
	// survive Kill and Restart.
	InMemory bool
}

// DynamoDB is a DynamoDB Local child process (Java) with a single shared
// database (-sharedDb: every access key and region sees the same tables).
// DynamoDB Local has no flag for its listen address: it listens on every
// interface of the port; clients use 127.0.0.1. It accepts any credentials.
// Its methods are safe for concurrent use.
type DynamoDB struct {
	*server
	jar, lib string
	inMemory bool
}

// StartDynamoDB starts DynamoDB Local on a free port (or opts.Port) and
// waits until it answers HTTP. The caller must call Close. It returns an
// error wrapping ErrNotInstalled when java or DynamoDBLocal.jar is missing
// (install it with DynamoDBInstall).
func StartDynamoDB(opts DynamoDBOptions) (*DynamoDB, error) {
	jar, lib, err := findDynamoDB()
	if err != nil {
		return nil, err
	}
	d := &DynamoDB{jar: jar, lib: lib, inMemory: opts.InMemory}
	d.server = &server{name: "dynamodb", stopSig: syscall.SIGTERM, launch: d.launch}
	if err := d.create(opts.Port, nil); err != nil {
		return nil, err
	}
	return d, nil
}

// NewDynamoDB starts DynamoDB Local for the test and closes it in
// t.Cleanup. When it is not installed the test is skipped (with the
// install command), or fails if the environment variable CI is "true".
func NewDynamoDB(t testing.TB, opts DynamoDBOptions) *DynamoDB {
	t.Helper()
	d, err := StartDynamoDB(opts)
	return forTest(t, d, err)
}

// Endpoint returns the server's URL, "http://127.0.0.1:PORT", the
// client's BaseEndpoint. It stays the same across Restart.
func (d *DynamoDB) Endpoint() string { return "http://" + d.Addr() }

// findDynamoDB finds java on PATH, and DynamoDBLocal.jar with its native
// library directory at $FXELECTION_DYNAMODB_LOCAL or in .cache/dynamodb of
// the working directory or one of its parents (the tests of a nested
// module run below the repository root).
func findDynamoDB() (jar, lib string, err error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", "", fmt.Errorf("start dynamodb: %w: java not found (install it with: apt-get install openjdk-17-jre-headless; then %s)",
			ErrNotInstalled, DynamoDBInstall)
	}
	var dirs []string
	if d := os.Getenv(DynamoDBEnv); d != "" {
		dirs = append(dirs, d)
	} else if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			dirs = append(dirs, filepath.Join(dir, ".cache", "dynamodb", dynamoDBEmulator))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	for _, d := range dirs {
		jar, lib := filepath.Join(d, "DynamoDBLocal.jar"), filepath.Join(d, "DynamoDBLocal_lib")
		if fi, err := os.Stat(jar); err == nil && fi.Mode().IsRegular() {
			if fi, err := os.Stat(lib); err == nil && fi.IsDir() {
				return jar, lib, nil
			}
		}
	}
	return "", "", fmt.Errorf("start dynamodb: %w (install it with: %s)", ErrNotInstalled, DynamoDBInstall)
}

// launch starts DynamoDB Local on port and waits until it answers a
// ListTables request.
func (d *DynamoDB) launch(port int) (*process, error) {
	// The JVM's temporary files (sqlite4java extracts its native library
	// there on every start, and a killed JVM never deletes it) stay in the
	// server's directory, which Close removes.
	tmp := filepath.Join(d.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	args := []string{
		"-Djava.library.path=" + d.lib,
		"-Djava.io.tmpdir=" + tmp,
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-jar", d.jar,
		"-port", strconv.Itoa(port),
		"-sharedDb",
		"-disableTelemetry",
	}
	if d.inMemory {
		args = append(args, "-inMemory")
	} else {
		data := filepath.Join(d.dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		args = append(args, "-dbPath", data)
	}
	cmd := exec.Command("java", args...)
	client := readyClient()
	return d.run(cmd, port, nil, dynamoDBReadyTimeout, func(addr string) error { return dynamoDBReady(client, "http://"+addr) })
}

// dynamoDBReady sends ListTables (DynamoDB Local accepts any signature but
// wants an Authorization header) and wants 200.
func dynamoDBReady(client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(`{}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ListTables: HTTP %d", resp.StatusCode)
	}
	return nil
}
