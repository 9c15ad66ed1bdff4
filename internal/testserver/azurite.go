package testserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// AzuriteVersion is the Azurite release the project tests against.
const AzuriteVersion = "3.35.0"

// AzuriteInstall is the command, run in the module root, that installs the
// azurite-blob emulator where this package looks for it.
const AzuriteInstall = "npm install --no-audit --no-fund --prefix .cache/azurite azurite@" + AzuriteVersion +
	" (in the module root, or ./scripts/test.sh; or set FXELECTION_AZURITE to an azurite-blob binary)"

// AzuriteEnv names the environment variable that points at an azurite-blob
// binary, overriding the project-local install.
const AzuriteEnv = "FXELECTION_AZURITE"

// Azurite's well-known development account.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

const azuriteReadyTimeout = 60 * time.Second

// AzuriteOptions configures StartAzurite and NewAzurite.
type AzuriteOptions struct {
	// Port is the Blob service port on 127.0.0.1; 0 picks a free one.
	Port int
}

// Azurite is an Azurite Blob service emulator child process (Node.js)
// listening on 127.0.0.1, with its data in a private temporary directory.
// It runs in strict mode (no --loose), so a request header Azurite does
// not support fails instead of being silently ignored. Its methods are
// safe for concurrent use.
//
// Azurite keeps blob metadata in a database it saves periodically, so
// Kill may lose the most recent changes; Stop (SIGTERM) saves them.
type Azurite struct {
	*server
	bin string
}

// StartAzurite starts an Azurite Blob service on a free loopback port (or
// opts.Port) and waits until it answers HTTP. The caller must call Close.
// It returns an error wrapping ErrNotInstalled when azurite-blob is found
// neither at $FXELECTION_AZURITE, nor in the project's .cache/azurite, nor
// on PATH (install it with AzuriteInstall).
func StartAzurite(opts AzuriteOptions) (*Azurite, error) {
	bin, err := findAzurite()
	if err != nil {
		return nil, err
	}
	a := &Azurite{bin: bin}
	a.server = &server{name: "azurite", stopSig: syscall.SIGTERM, launch: a.launch}
	if err := a.create(opts.Port, nil); err != nil {
		return nil, err
	}
	return a, nil
}

// NewAzurite starts an Azurite server for the test and closes it in
// t.Cleanup. When azurite-blob is not installed the test is skipped (with
// the install command), or fails if the environment variable CI is
// "true". Other startup errors fail the test.
func NewAzurite(t testing.TB, opts AzuriteOptions) *Azurite {
	t.Helper()
	a, err := StartAzurite(opts)
	return forTest(t, a, err)
}

// ServiceURL returns the Blob service URL of the development account,
// "http://127.0.0.1:PORT/devstoreaccount1", as azblob.NewClient* expects
// it. It stays the same across Restart.
func (a *Azurite) ServiceURL() string { return "http://" + a.Addr() + "/" + AzuriteAccount }

// AccountName returns the development account's name.
func (a *Azurite) AccountName() string { return AzuriteAccount }

// AccountKey returns the development account's (public, well-known) key.
func (a *Azurite) AccountKey() string { return AzuriteKey }

// ConnectionString returns a connection string for the development
// account on this server.
func (a *Azurite) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + AzuriteAccount + ";AccountKey=" + AzuriteKey +
		";BlobEndpoint=" + a.ServiceURL() + ";"
}

// findAzurite looks for azurite-blob at $FXELECTION_AZURITE, then in the
// project-local install (.cache/azurite under the module root, found by
// walking up from the working directory to go.mod), then on PATH.
func findAzurite() (string, error) {
	if bin := os.Getenv(AzuriteEnv); bin != "" {
		if isExecutable(bin) {
			return bin, nil
		}
		return "", fmt.Errorf("start azurite: %w: $%s=%s is not an executable file (install it with: %s)",
			ErrNotInstalled, AzuriteEnv, bin, AzuriteInstall)
	}
	if root, err := moduleRoot(); err == nil {
		bin := filepath.Join(root, ".cache", "azurite", "node_modules", ".bin", "azurite-blob")
		if isExecutable(bin) {
			return bin, nil
		}
	}
	if bin, err := exec.LookPath("azurite-blob"); err == nil {
		return bin, nil
	}
	return "", fmt.Errorf("start azurite: %w (install it with: %s)", ErrNotInstalled, AzuriteInstall)
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}

// launch starts azurite-blob on port (directly, not through npx, so that
// killing the process kills the server) and waits until it answers HTTP.
func (a *Azurite) launch(port int) (*process, error) {
	data := filepath.Join(a.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(a.bin,
		"--blobHost", "127.0.0.1",
		"--blobPort", strconv.Itoa(port),
		"--location", data,
		"--silent",
		"--skipApiVersionCheck",
		"--disableTelemetry",
	)
	client := readyClient()
	return a.run(cmd, port, nil, azuriteReadyTimeout, func(addr string) error {
		_, err := httpStatus(client, "http://"+addr+"/") // any HTTP answer means it listens
		return err
	})
}
