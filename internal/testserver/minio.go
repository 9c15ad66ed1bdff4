package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// MinIOInstall is the command that installs the minio server binary this
// package looks for.
const MinIOInstall = "go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c (or ./scripts/test.sh)"

const minioReadyTimeout = 60 * time.Second

// MinIOOptions configures StartMinIO and NewMinIO.
type MinIOOptions struct {
	// Port is the S3 API port on 127.0.0.1; 0 picks a free one.
	Port int
}

// MinIO is a single-drive minio server child process listening on
// 127.0.0.1, with its data in a private temporary directory (so objects
// survive Kill and Restart). Its methods are safe for concurrent use.
type MinIO struct {
	*server
	bin         string
	accessKey   string
	secretKey   string
	consolePort int // fixed on first launch, kept across restarts
}

// StartMinIO starts a minio server on a free loopback port (or opts.Port)
// with fresh root credentials and waits until /minio/health/ready answers
// 200. The caller must call Close. It returns an error wrapping
// ErrNotInstalled when the minio binary is found neither on PATH nor in
// $GOPATH/bin (install it with MinIOInstall).
func StartMinIO(opts MinIOOptions) (*MinIO, error) {
	bin, err := findMinIO()
	if err != nil {
		return nil, err
	}
	var secret [12]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("start minio: %w", err)
	}
	m := &MinIO{bin: bin, accessKey: "fxelection", secretKey: hex.EncodeToString(secret[:])}
	m.server = &server{name: "minio", stopSig: syscall.SIGTERM, launch: m.launch}
	if err := m.create(opts.Port, func() { m.consolePort = 0 }); err != nil {
		return nil, err
	}
	return m, nil
}

// NewMinIO starts a MinIO server for the test and closes it in t.Cleanup.
// When minio is not installed the test is skipped (with the install
// command), or fails if the environment variable CI is "true". Other
// startup errors fail the test.
func NewMinIO(t testing.TB, opts MinIOOptions) *MinIO {
	t.Helper()
	m, err := StartMinIO(opts)
	return forTest(t, m, err)
}

// Endpoint returns the S3 endpoint, "127.0.0.1:PORT" (plain HTTP), as
// minio.New expects it. It stays the same across Restart.
func (m *MinIO) Endpoint() string { return m.Addr() }

// AccessKey returns the root user.
func (m *MinIO) AccessKey() string { return m.accessKey }

// SecretKey returns the root password.
func (m *MinIO) SecretKey() string { return m.secretKey }

// findMinIO looks for the minio binary on PATH, then in each GOPATH's bin
// directory (where go install puts it) and in $GOBIN.
func findMinIO() (string, error) {
	if bin, err := exec.LookPath("minio"); err == nil {
		return bin, nil
	}
	var dirs []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		dirs = append(dirs, gobin)
	}
	for _, p := range filepath.SplitList(build.Default.GOPATH) {
		dirs = append(dirs, filepath.Join(p, "bin"))
	}
	for _, d := range dirs {
		bin := filepath.Join(d, "minio")
		if fi, err := os.Stat(bin); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return bin, nil
		}
	}
	return "", fmt.Errorf("start minio: %w (install it with: %s)", ErrNotInstalled, MinIOInstall)
}

// launch starts minio on port (and the console on a port of its own) and
// waits until the readiness endpoint answers 200.
func (m *MinIO) launch(port int) (*process, error) {
	if m.consolePort == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		m.consolePort = p
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(m.bin, "server", filepath.Join(m.dir, "data"),
		"--address", addr,
		"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(m.consolePort)),
		"--quiet",
	)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+m.accessKey,
		"MINIO_ROOT_PASSWORD="+m.secretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=on",
	)
	client := readyClient()
	return m.run(cmd, port, nil, minioReadyTimeout, func(addr string) error { return minioReady(client, "http://"+addr) })
}

// minioReady checks that the server at base is ready: GET
// /minio/health/ready answers 200 and an anonymous S3 request (ListBuckets)
// is answered with something other than 503, which MinIO sends until its
// object layer is initialized (the health check can pass before that).
func minioReady(client *http.Client, base string) error {
	for _, c := range []struct {
		path string
		ok   func(status int) bool
	}{
		{"/minio/health/ready", func(s int) bool { return s == http.StatusOK }},
		{"/", func(s int) bool { return s != http.StatusServiceUnavailable && s < 500 }},
	} {
		status, err := httpStatus(client, base+c.path)
		if err != nil {
			return err
		}
		if !c.ok(status) {
			return fmt.Errorf("GET %s: HTTP %d", c.path, status)
		}
	}
	return nil
}

// readyClient is an HTTP client for readiness checks: one second per
// request, a new connection each time.
func readyClient() *http.Client {
	return &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// httpStatus returns the status of GET url.
func httpStatus(client *http.Client, url string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
