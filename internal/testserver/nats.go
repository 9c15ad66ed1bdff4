package testserver

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const natsReadyTimeout = 15 * time.Second

// NatsOptions configures StartNats and NewNats.
type NatsOptions struct {
	// Port is the TCP port to listen on; 0 picks a free one.
	Port int
	// User and Password, if set, are required of every client.
	User, Password string
}

// Nats is a nats-server child process with JetStream enabled, listening on
// 127.0.0.1, its JetStream store in a private directory. The store survives
// Kill and Restart unless ClearData is called in between. Its methods are
// safe for concurrent use.
type Nats struct {
	*server
	bin  string
	opts NatsOptions
	name string // server_name, unique, to recognise our server on the port
}

// StartNats starts nats-server -js on a free loopback port (or opts.Port)
// and waits until it answers with JetStream enabled. The caller must call
// Close. It returns an error wrapping ErrNotInstalled when nats-server is
// not found (on PATH or in /usr/sbin, where Debian puts it).
func StartNats(opts NatsOptions) (*Nats, error) {
	bin, err := lookPath("nats", "nats-server", "apt-get install nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr != nil {
			return nil, err
		}
		bin = "/usr/sbin/nats-server"
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	n := &Nats{bin: bin, opts: opts, name: "fxelection-test-" + hex.EncodeToString(id[:])}
	n.server = &server{name: "nats", stopSig: syscall.SIGTERM, launch: n.launch}
	if err := n.create(opts.Port, nil); err != nil {
		return nil, err
	}
	return n, nil
}

// NewNats starts a NATS server for the test and closes it in t.Cleanup.
// When nats-server is not installed the test is skipped, or fails if the
// environment variable CI is "true".
func NewNats(t testing.TB, opts NatsOptions) *Nats {
	t.Helper()
	n, err := StartNats(opts)
	return forTest(t, n, err)
}

// URL returns the client URL, "nats://127.0.0.1:PORT".
func (n *Nats) URL() string { return "nats://" + n.Addr() }

// ClearData deletes the JetStream store of a stopped or killed server, so
// that the next Restart starts empty.
func (n *Nats) ClearData() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil {
		return errors.New("clear nats data: server is running")
	}
	if err := os.RemoveAll(n.storeDir()); err != nil {
		return fmt.Errorf("clear nats data: %w", err)
	}
	return nil
}

func (n *Nats) storeDir() string { return filepath.Join(n.dir, "jetstream") }

// launch starts nats-server on port and waits until it greets with its
// server name and JetStream on.
func (n *Nats) launch(port int) (*process, error) {
	cmd := exec.Command(n.bin,
		"-a", "127.0.0.1",
		"-p", strconv.Itoa(port),
		"-n", n.name,
		"-js",
		"-sd", n.storeDir(),
	)
	if n.opts.User != "" {
		cmd.Args = append(cmd.Args, "--user", n.opts.User, "--pass", n.opts.Password)
	}
	return n.run(cmd, port, nil, natsReadyTimeout, func(addr string) error { return natsReady(addr, n.name) })
}

// natsReady checks that the server at addr sends an INFO greeting with the
// given server name and JetStream enabled.
func natsReady(addr, name string) error {
	conn, err := dial(addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	body, ok := strings.CutPrefix(strings.TrimSpace(line), "INFO ")
	if !ok {
		return fmt.Errorf("unexpected greeting on %s", addr)
	}
	var info struct {
		Name      string `json:"server_name"`
		JetStream bool   `json:"jetstream"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return fmt.Errorf("INFO on %s: %w", addr, err)
	}
	if info.Name != name {
		return fmt.Errorf("another server answers on %s", addr)
	}
	if !info.JetStream {
		return fmt.Errorf("JetStream not enabled on %s", addr)
	}
	return nil
}
