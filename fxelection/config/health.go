package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/proctree"
)

// Health is an election's "health" key: the check that gates its
// campaigning (fxelection.Config.Health), written as data: fxelection.Health
// (its Interval and Threshold as "interval" and "threshold") with the check
// given as a command or an HTTP URL. Exactly one of Command and HTTP is
// set.
//
//	"health": {"command": ["pg_isready", "-h", "127.0.0.1"], "interval": "5s", "threshold": 3}
//	"health": {"http": "http://127.0.0.1:8080/healthz"}
type Health struct {
	// Command is a program and its arguments (argv, not a shell line: no
	// shell runs it); see CommandCheck.
	Command []string `json:"command,omitempty"`
	// HTTP is an http or https URL; see HTTPCheck.
	HTTP string `json:"http,omitempty"`
	// Health is fxelection.Health's Interval (default: the election's
	// retry_period) and Threshold (default: 3); its Check is the one
	// Command or HTTP describes.
	fxelection.Health
}

// MarshalJSON writes h with the URL and every argument passed through
// backendkit.RedactText: URL user info and query strings, and key=value
// spellings of passwords and tokens, come out as "xxxxx", so printing a
// decoded document does not reveal them. Put secrets that have no such
// shape in a file the command reads, not in its arguments.
func (h Health) MarshalJSON() ([]byte, error) {
	type plain Health
	p := plain(h)
	if p.HTTP != "" {
		p.HTTP = backendkit.RedactText(p.HTTP)
	}
	if p.Command != nil {
		p.Command = make([]string, len(h.Command))
		for i, a := range h.Command {
			p.Command[i] = backendkit.RedactText(a)
		}
	}
	return marshalSettings(reflect.ValueOf(p))
}

// check returns the check h describes, or the error naming (with a path
// relative to the health key) what is wrong with it.
func (h *Health) check() (func(context.Context) error, string, error) {
	switch {
	case len(h.Command) > 0 && h.HTTP != "":
		return nil, "", fmt.Errorf("%w: set command or http, not both", ErrInvalidValue)
	case h.HTTP != "":
		c, err := HTTPCheck(h.HTTP)
		return c, "http", err
	case h.Command != nil:
		c, err := CommandCheck(h.Command)
		if i, ok := argIndex(err); ok {
			return nil, "command[" + strconv.Itoa(i) + "]", err
		}
		return c, "command", err
	}
	return nil, "", fmt.Errorf("%w: set command or http", ErrRequired)
}

// MaxHealthOutput is how much of a health command's output (stdout and
// stderr together) or of an HTTP health answer's body is read; the rest is
// discarded as it arrives.
const MaxHealthOutput = 4 << 10

// healthWaitDelay bounds how long a health command's Wait waits for its
// output once the command has exited or been killed (a process that
// escaped its group and still holds the pipe).
const healthWaitDelay = time.Second

// argError is a CommandCheck error about one argument.
type argError struct {
	i   int
	err error
}

func (e *argError) Error() string { return "argument " + strconv.Itoa(e.i) + ": " + e.err.Error() }
func (e *argError) Unwrap() error { return e.err }

func argIndex(err error) (int, bool) {
	var ae *argError
	if errors.As(err, &ae) {
		return ae.i, true
	}
	return 0, false
}

// CommandCheck returns a health check that runs argv (argv[0] is looked up
// in PATH as exec.Command does; no shell is involved) and passes iff it
// exits with status 0 before the check's context ends. The command gets
// no stdin and the process's environment; of its output at most
// MaxHealthOutput bytes are kept, and the first line of that (redacted by
// backendkit.RedactText, at most 200 bytes) is quoted in the error of a
// failed check. Each run is a contained process tree: its own process
// group, and on Linux every process it starts, also one that leaves the
// group (setsid, a daemon) as long as it keeps the environment variable
// FXELECTION_TREE_<random> the command is given (env -i and sudo drop it)
// and this process may read its /proc/PID/environ (same uid, or root).
// When the context ends the whole tree is killed (SIGKILL), and so is
// whatever is left of it once the command exits, and the check returns
// once it is gone (up to 1s for a process that cannot die yet), so a check
// leaks no process and no goroutine (Wait gives up on the output 1s after
// the command has exited or been killed). Errors name neither the program
// nor its arguments.
//
// It fails, with an error matching ErrInvalidValue or ErrRequired, when
// argv is empty, argv[0] is empty, or an argument holds a NUL byte.
func CommandCheck(argv []string) (func(context.Context) error, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: want a program and its arguments", ErrRequired)
	}
	if argv[0] == "" {
		return nil, &argError{0, fmt.Errorf("%w: empty program name", ErrRequired)}
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, &argError{i, fmt.Errorf("%w: contains a NUL byte", ErrInvalidValue)}
		}
	}
	argv = append([]string(nil), argv...)
	return func(ctx context.Context) error { return runCommand(ctx, argv) }, nil
}

func runCommand(ctx context.Context, argv []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("health command: %w", err)
	}
	out := &headBuffer{max: MaxHealthOutput}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = healthWaitDelay
	tree := proctree.Command(cmd, proctree.Options{})
	if err := tree.Start(); err != nil {
		return fmt.Errorf("health command: %w", startError(err))
	}
	err := tree.Wait()
	tree.End(healthWaitDelay) // whatever the command left running
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("health command: killed: %w", ctx.Err())
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrWaitDelay):
		return errors.New("health command: exited, but a process it started kept its output open")
	}
	msg := "exited"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg = ee.ProcessState.String() // "exit status 1", "signal: killed"
	}
	if line := out.firstLine(); line != "" {
		msg += ": " + strconv.Quote(line)
	}
	return errors.New("health command: " + msg)
}

// startError keeps what is wrong and drops the path (the program's name is
// a setting's value).
func startError(err error) error {
	var pe *os.PathError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return errors.New("program not found in PATH")
	case errors.As(err, &pe):
		return fmt.Errorf("cannot run the program: %w", pe.Err)
	}
	return errors.New("cannot run the program")
}

// headBuffer keeps the first max bytes written and discards the rest, so
// a chatty command never blocks on its pipe nor grows memory.
type headBuffer struct {
	max int
	buf bytes.Buffer
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// firstLine is the output's first non-empty line, redacted and cut to 200
// bytes.
func (b *headBuffer) firstLine() string {
	for line := range strings.SplitSeq(b.buf.String(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			line = backendkit.RedactText(line)
			if len(line) > 200 {
				line = strings.ToValidUTF8(line[:200], "") + "…"
			}
			return line
		}
	}
	return ""
}

// HTTPCheck returns a health check that sends a GET to rawURL and passes
// iff the answer's status is 2xx before the check's context ends.
// Redirects are not followed (a 3xx fails); at most MaxHealthOutput bytes
// of the body are read; connections are not kept between checks, so no
// idle connection (and no goroutine) outlives a check. Proxies are taken
// from the environment as by http.ProxyFromEnvironment. Errors name neither
// the URL nor any part of it: user info and query strings never appear.
//
// It fails, with an error matching ErrInvalidValue, unless rawURL is an
// absolute http or https URL with a host.
func HTTPCheck(rawURL string) (func(context.Context) error, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: want an absolute http or https URL", ErrInvalidValue)
	}
	client := &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	target := u.String()
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return errors.New("health http: cannot build the request")
		}
		resp, err := client.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // its message quotes the URL
			}
			return fmt.Errorf("health http: %w", backendkit.RedactError(err, rawURL, target))
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxHealthOutput))
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("health http: status %d", resp.StatusCode)
		}
		return nil
	}, nil
}
