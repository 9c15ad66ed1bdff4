package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/testtier"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRealModeHTTP runs one candidate on the in-memory backend and checks
// its endpoints, then stops it with SIGTERM.
func TestRealModeHTTP(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	addr := freeAddr(t)
	cmd := exec.Command(binary, "--backend", "memory", "--election", "web", "--id", "solo", "--http", addr,
		"--lease", "3s", "--renew-deadline", "2s", "--retry", "500ms", "--log-format", "json")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	deadline := time.Now().Add(30 * time.Second)
	var leader leaderJSON
	for {
		if code, body := get(t, "http://"+addr+"/leader"); code == 200 {
			if err := json.Unmarshal([]byte(body), &leader); err != nil {
				t.Fatalf("/leader: %v: %q", err, body)
			}
			if leader.Leading {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("never led")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if leader.Leader != "solo" || leader.Term == 0 || leader.Election != "web" || leader.Metadata["http"] != addr {
		t.Fatalf("/leader = %+v", leader)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, "http://"+addr+path); code != 200 || !strings.Contains(body, `"election":"web"`) {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	// Only GET and HEAD: everything else is 405 with an Allow header.
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/leader"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, "PROPFIND"} {
			req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader("x=1"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q; want 405, Allow \"GET, HEAD\"", method, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		resp, err := http.Head("http://" + addr + path)
		if err != nil {
			t.Fatalf("HEAD %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s: %d, want 200", path, resp.StatusCode)
		}
	}
	code, body := get(t, "http://"+addr+"/metrics")
	if code != 200 || !strings.Contains(body, `fxelection_is_leader{election="web",identity="solo"} 1`) {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within the stop timeout after SIGTERM")
	}
}

func TestServerSetsEveryTimeout(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), serverTimeouts)
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 {
			t.Errorf("%s = %v, want a bound", name, d)
		}
	}
	if serverTimeouts.read < serverTimeouts.readHeader {
		t.Errorf("read timeout %v shorter than the header timeout %v", serverTimeouts.read, serverTimeouts.readHeader)
	}
}

// serveTest serves h with timeouts on a loopback port for the test.
func serveTest(t *testing.T, h http.Handler, to httpTimeouts) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, to)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// closedWithin reads from c until it fails and reports whether that
// happened within limit (the server closed the connection).
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestServerTimeoutsOverHTTP checks, over real connections, that the
// server the example builds drops an idle keep-alive connection, a client
// that never finishes its header, one that never finishes its body, and a
// response that cannot be written in time. The timeouts are short here;
// the limits the test waits are long (a busy machine).
func TestServerTimeoutsOverHTTP(t *testing.T) {
	const short, long, limit = 200 * time.Millisecond, time.Minute, 20 * time.Second
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })

	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		addr := serveTest(t, ok, httpTimeouts{readHeader: long, read: long, write: long, idle: short})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !closedWithin(t, c, limit) {
			t.Fatalf("idle keep-alive connection still open after %v", limit)
		}
	})
	t.Run("header", func(t *testing.T) {
		t.Parallel()
		addr := serveTest(t, ok, httpTimeouts{readHeader: short, read: long, write: long, idle: long})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n")
		if !closedWithin(t, c, limit) {
			t.Fatalf("connection with an unfinished header still open after %v", limit)
		}
	})
	t.Run("body", func(t *testing.T) {
		t.Parallel()
		readErr := make(chan error, 1)
		addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			readErr <- err
		}), httpTimeouts{readHeader: long, read: short, write: long, idle: long})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nx")
		select {
		case err := <-readErr:
			if err == nil {
				t.Fatal("the handler read a body the client never sent")
			}
		case <-time.After(limit):
			t.Fatalf("a body that never ends held the handler for %v", limit)
		}
	})
	t.Run("write", func(t *testing.T) {
		t.Parallel()
		addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(4 * short) // past the write deadline
			_, _ = w.Write(make([]byte, 1<<20))
		}), httpTimeouts{readHeader: long, read: long, write: short, idle: long})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(limit))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && n == 1<<20 {
				t.Fatal("a response written after the write timeout arrived whole")
			}
		}
	})
}
