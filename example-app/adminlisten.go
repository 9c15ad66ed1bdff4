package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The admin endpoint's transport and credential. Reaching the endpoint
// means controlling the process: replacing its elections, making its
// leaders resign, and (with --admin-allow-placeholders) reading any file or
// environment variable it can. So it listens on a unix socket by default,
// whose permission bits say who may connect (--admin-socket-mode, 0600:
// this user), and a TCP endpoint, which anyone on the host can reach,
// needs a bearer token (--admin-token-file or FXELECTION_ADMIN_TOKEN) on
// every request.

// unixPrefix starts an --admin value that names a unix socket, as Caddy's
// admin addresses do ("unix//run/app/admin.sock").
const unixPrefix = "unix/"

// defaultSocketMode is --admin-socket-mode's default: only this user may
// connect.
const defaultSocketMode os.FileMode = 0o600

// maxSocketPath is the longest socket path the kernel accepts (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Bounds on an admin token: long enough not to be guessed, short enough to
// be a token and not a file read by mistake.
const (
	minAdminToken = 16
	maxAdminToken = 4096
)

// defaultAdmin is --admin's default: a unix socket in this user's private
// directory under the temporary directory (as tmux's), which the endpoint
// creates with mode 0700.
var defaultAdmin = unixPrefix + defaultAdminSocket()

func defaultAdminSocket() string {
	return filepath.Join(os.TempDir(), "example-app-"+strconv.Itoa(os.Getuid()), "admin.sock")
}

// socketPath returns the path of an --admin value naming a unix socket.
func socketPath(addr string) (string, bool) {
	return strings.CutPrefix(addr, unixPrefix)
}

// adminSettings are the admin endpoint's: where it listens, what requests
// must carry and what a loaded document may hold.
type adminSettings struct {
	addr   string // "unix/PATH" or host:port ("": none)
	remote bool   // a non-loopback TCP address was allowed
	mode   os.FileMode
	// token is the credential every request must carry as "Authorization:
	// Bearer TOKEN" ("": none; required on TCP).
	token string
	// allowPlaceholders resolves {env.NAME} and {file.PATH} in loaded
	// documents; by default a document holding one is refused.
	allowPlaceholders bool
}

// adminSettings are o's admin endpoint settings; token is the credential
// adminCredential read.
func (o options) adminSettings(token string) adminSettings {
	return adminSettings{addr: o.adminAddr, remote: o.adminRemote, mode: o.adminMode, token: token, allowPlaceholders: o.adminAllowPlaceholders}
}

// adminCredential returns the admin token: FXELECTION_ADMIN_TOKEN's, or
// --admin-token-file's content without its final line break ("" when
// neither is set). A token must be 16 to 4096 bytes of printable ASCII
// without spaces; the error names the flag or variable, never the token.
func (o options) adminCredential() (string, error) {
	token, label := o.adminToken, "FXELECTION_ADMIN_TOKEN"
	if o.adminTokenFile != "" {
		label = o.label("admin-token-file")
		f, err := openRegularFile(o.adminTokenFile)
		if err != nil {
			return "", usagef("%s: cannot read the token: %s", label, oneLine(causeOf(err)))
		}
		data, err := io.ReadAll(io.LimitReader(f, maxAdminToken+3))
		f.Close()
		if err != nil {
			return "", usagef("%s: cannot read the token: %s", label, oneLine(causeOf(err)))
		}
		token = strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	}
	if token == "" && o.adminTokenFile == "" {
		return "", nil
	}
	if len(token) < minAdminToken || len(token) > maxAdminToken {
		return "", usagef("%s: the token must be %d to %d bytes long", label, minAdminToken, maxAdminToken)
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] > '~' {
			return "", usagef("%s: the token must be printable ASCII without spaces (byte %d is not)", label, i)
		}
	}
	return token, nil
}

// openRegularFile opens path for reading, refusing anything but a regular
// file (a FIFO would block, a device never end).
func openRegularFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, err
	}
	return f, nil
}

// causeOf is an os error's cause without the path it names.
func causeOf(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// authorized reports whether r carries "Authorization: Bearer token". The
// comparison takes the same time whatever the header holds: both sides are
// hashed first, so neither the token's bytes nor its length leak.
func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// listenAdmin opens the admin endpoint's listener: a unix socket for
// "unix/PATH" (listenSocket), else TCP.
func listenAdmin(s adminSettings) (net.Listener, error) {
	if path, ok := socketPath(s.addr); ok {
		return listenSocket(path, s.mode, path == defaultAdminSocket())
	}
	return net.Listen("tcp", s.addr)
}

// umaskMu serialises listenSocket's umask changes (the umask is the
// process's).
var umaskMu sync.Mutex

// listenSocket creates a unix socket at path whose permission bits are
// mode. The directory must exist, unless private: then it is created with
// mode 0700 if missing, and refused unless it is a directory of this user
// closed to everyone else (it lives in a directory everyone may write). A
// path that exists is refused unless it is a socket nobody answers on (left
// by a process that died), which is removed; one that answers is in use.
// The socket has its bits from the start (the umask is narrowed around
// bind), so nobody else can connect in between.
func listenSocket(path string, mode os.FileMode, private bool) (net.Listener, error) {
	if private {
		dir := filepath.Dir(path)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("directory: %s", causeOf(err))
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return nil, fmt.Errorf("directory: %s", causeOf(err))
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("directory %s must be a directory of this user that nobody else may open (mode 0700)", show(dir))
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", show(path))
		}
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(context.Background(), "unix", path)
		switch {
		case err == nil:
			c.Close()
			return nil, fmt.Errorf("%s is in use: another process answers on it", show(path))
		case !errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%s: cannot tell whether it is in use: %w", show(path), err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("stale socket %s: %s", show(path), causeOf(err))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s", show(path), causeOf(err))
	}
	umaskMu.Lock()
	old := syscall.Umask(int(0o777 &^ mode.Perm()))
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%s: %s", show(path), causeOf(err))
	}
	return ln, nil
}

// adminClient is reload's HTTP client for addr and the base URL of the
// endpoint: over the unix socket for "unix/PATH".
func adminClient(addr string) (*http.Client, string) {
	path, ok := socketPath(addr)
	if !ok {
		return http.DefaultClient, "http://" + addr
	}
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
	}}, "http://localhost"
}
