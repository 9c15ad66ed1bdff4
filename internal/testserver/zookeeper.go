package testserver

import (
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

const zookeeperReadyTimeout = 60 * time.Second

// zookeeperJar is where Debian's zookeeper package puts the server; its
// dependencies are beside it in /usr/share/java.
const zookeeperJar = "/usr/share/java/zookeeper.jar"

// ZooKeeperOptions configures StartZooKeeper and NewZooKeeper.
type ZooKeeperOptions struct {
	// Port is the TCP port to listen on; 0 picks a free one.
	Port int
	// TickTime is ZooKeeper's basic time unit, which bounds the session
	// timeouts it negotiates (2 to 20 ticks by default). Default: 100ms,
	// so that tests can ask for sessions as short as 200ms.
	TickTime time.Duration
	// MaxSessionTimeout is the longest session timeout the server grants.
	// Default: 60s.
	MaxSessionTimeout time.Duration
}

// ZooKeeper is a standalone ZooKeeper server (Debian's zookeeper package,
// run with java) listening on 127.0.0.1, its data in a private directory,
// the admin server off. The data survives Kill and Restart. Its methods
// are safe for concurrent use.
type ZooKeeper struct {
	*server
	java string
	opts ZooKeeperOptions
}

// StartZooKeeper starts ZooKeeper on a free loopback port (or opts.Port)
// and waits until it answers "imok" and serves requests. The caller must
// call Close. It returns an error wrapping ErrNotInstalled when java or
// Debian's zookeeper jar is missing.
func StartZooKeeper(opts ZooKeeperOptions) (*ZooKeeper, error) {
	const hint = "apt-get install zookeeper"
	java, err := lookPath("zookeeper", "java", hint)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(zookeeperJar); err != nil {
		return nil, fmt.Errorf("start zookeeper: %w: %v (install it with: %s)", ErrNotInstalled, err, hint)
	}
	if opts.TickTime <= 0 {
		opts.TickTime = 100 * time.Millisecond
	}
	if opts.MaxSessionTimeout <= 0 {
		opts.MaxSessionTimeout = time.Minute
	}
	z := &ZooKeeper{java: java, opts: opts}
	z.server = &server{name: "zookeeper", stopSig: syscall.SIGTERM, launch: z.launch}
	if err := z.create(opts.Port, nil); err != nil {
		return nil, err
	}
	return z, nil
}

// NewZooKeeper starts a ZooKeeper server for the test and closes it in
// t.Cleanup. When it is not installed the test is skipped, or fails if the
// environment variable CI is "true".
func NewZooKeeper(t testing.TB, opts ZooKeeperOptions) *ZooKeeper {
	t.Helper()
	z, err := StartZooKeeper(opts)
	return forTest(t, z, err)
}

// launch writes zoo.cfg for port and starts the server with java on
// Debian's class path, then waits until it is ready.
func (z *ZooKeeper) launch(port int) (*process, error) {
	cfg := strings.Join([]string{
		"tickTime=" + strconv.FormatInt(z.opts.TickTime.Milliseconds(), 10),
		"dataDir=" + filepath.Join(z.dir, "data"),
		"clientPort=" + strconv.Itoa(port),
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,stat,cons",
		"minSessionTimeout=" + strconv.FormatInt(2*z.opts.TickTime.Milliseconds(), 10),
		"maxSessionTimeout=" + strconv.FormatInt(z.opts.MaxSessionTimeout.Milliseconds(), 10),
		"",
	}, "\n")
	path := filepath.Join(z.dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(z.java,
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.log.dir="+z.dir,
		"-Dzookeeper.root.logger=INFO,CONSOLE",
		"-cp", "/usr/share/java/*:/etc/zookeeper/conf",
		"org.apache.zookeeper.server.ZooKeeperServerMain", path,
	)
	return z.run(cmd, port, nil, zookeeperReadyTimeout, zookeeperReady)
}

// zookeeperReady asks the server at addr "srvr" and checks it serves
// (ZooKeeper answers "This ZooKeeper instance is not currently serving
// requests" until it has loaded its data).
func zookeeperReady(addr string) error {
	conn, err := dial(addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return err
	}
	var b strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := conn.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(b.String(), "Mode: standalone") {
		return fmt.Errorf("zookeeper on %s not serving yet", addr)
	}
	return nil
}
