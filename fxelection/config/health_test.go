package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

func TestHealthDocument(t *testing.T) {
	l := config.Loader{LookupEnv: env(map[string]string{"PW": secret})}
	d, err := l.Parse([]byte(doc(
		`{"name": "a", "health": {"command": ["pg_isready", "-h", "127.0.0.1"], "interval": "5s", "threshold": 2}, "backend": `+mem+`}`,
		`{"name": "b", "health": {"http": "http://u:{env.PW}@127.0.0.1:1/healthz?token={env.PW}"}, "exit_on_loss": true, "backend": `+mem+`}`,
	)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.Elections[0].Config(), d.Elections[1].Config()
	if a.Health.Check == nil || a.Health.Interval != 5*time.Second || a.Health.Threshold != 2 || a.ExitOnLoss {
		t.Errorf("command election: check %v, interval %v, threshold %d, exit on loss %v",
			a.Health.Check != nil, a.Health.Interval, a.Health.Threshold, a.ExitOnLoss)
	}
	if b.Health.Check == nil || b.Health.Interval != 0 || b.Health.Threshold != 0 || !b.ExitOnLoss {
		t.Errorf("http election: check %v, interval %v, threshold %d, exit on loss %v",
			b.Health.Check != nil, b.Health.Interval, b.Health.Threshold, b.ExitOnLoss)
	}
	if c := d.Elections[0].Config(); c.Health.Check == nil {
		t.Error("Config() twice")
	}

	y, err := l.ParseYAML([]byte(`
elections:
  - name: a
    exit_on_loss: true
    health:
      command: [pg_isready, -h, 127.0.0.1]
      interval: 5s
      threshold: 2
    backend: {module: fxelection.backends.memory}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c := y.Elections[0].Config(); c.Health.Check == nil || c.Health.Interval != 5*time.Second || c.Health.Threshold != 2 || !c.ExitOnLoss {
		t.Errorf("YAML: check %v, interval %v, threshold %d, exit on loss %v", c.Health.Check != nil, c.Health.Interval, c.Health.Threshold, c.ExitOnLoss)
	}
}

func TestHealthDocumentErrors(t *testing.T) {
	const pw = "hunter2-health-secret"
	el := func(health string) string {
		return doc(`{"name": "a", "retry_period": "1s", "health": ` + health + `, "backend": ` + mem + `}`)
	}
	for _, tc := range []struct {
		name, doc string
		want      string
		is        error
	}{
		{"unknown key", el(`{"comand": ["true"]}`), `elections[0].health.comand: unknown key (did you mean "command"?)`, config.ErrUnknownKey},
		{"neither", el(`{"interval": "1s"}`), `elections[0].health: required: set command or http`, config.ErrRequired},
		{"both", el(`{"command": ["true"], "http": "http://127.0.0.1/"}`), `elections[0].health: invalid value: set command or http, not both`, config.ErrInvalidValue},
		{"empty command", el(`{"command": []}`), `elections[0].health.command: required`, config.ErrRequired},
		{"empty program", el(`{"command": ["", "x"]}`), `elections[0].health.command[0]: argument 0: required: empty program name`, config.ErrRequired},
		{"NUL in an argument", el(`{"command": ["true", "a\u0000` + pw + `"]}`), `elections[0].health.command[1]: argument 1: invalid value: contains a NUL byte`, config.ErrInvalidValue},
		{"command is a string", el(`{"command": "true"}`), `elections[0].health.command: wrong type: want an array, got string`, config.ErrWrongType},
		{"not http", el(`{"http": "ftp://user:` + pw + `@host/x"}`), `elections[0].health.http: invalid value: want an absolute http or https URL`, config.ErrInvalidValue},
		{"relative", el(`{"http": "/healthz?token=` + pw + `"}`), `elections[0].health.http: invalid value: want an absolute http or https URL`, config.ErrInvalidValue},
		{"interval as number", el(`{"command": ["true"], "interval": 5}`), `elections[0].health.interval: wrong type`, config.ErrWrongType},
		{"interval too short", el(`{"command": ["true"], "interval": "1ms"}`), `elections[0].health.interval: fxelection: Health.Interval: must be at least 10ms`, nil},
		{"negative threshold", el(`{"command": ["true"], "threshold": -1}`), `elections[0].health.threshold: fxelection: Health.Threshold: must be at least 1`, nil},
		{"health is a string", el(`"true"`), `elections[0].health: wrong type: want an object, got string`, config.ErrWrongType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("error quotes a value: %q", err)
			}
			var pe *config.PathError
			if !errors.As(err, &pe) {
				t.Errorf("not a *PathError: %v", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("does not match %v: %v", tc.is, err)
			}
		})
	}
}

func TestCommandCheck(t *testing.T) {
	run := func(ctx context.Context, argv ...string) error {
		t.Helper()
		check, err := config.CommandCheck(argv)
		if err != nil {
			t.Fatal(err)
		}
		return check(ctx)
	}
	ctx := context.Background()
	if err := run(ctx, "true"); err != nil {
		t.Errorf("true: %v", err)
	}
	err := run(ctx, "sh", "-c", "echo; echo 'db down password=hunter2-pw'; exit 3")
	if err == nil || err.Error() != `health command: exit status 3: "db down password=xxxxx"` {
		t.Errorf("exit 3: %v", err)
	}
	if err := run(ctx, "no-such-program-"+strconv.Itoa(os.Getpid())); err == nil || err.Error() != "health command: program not found in PATH" {
		t.Errorf("missing program: %v", err)
	}
	// Output beyond MaxHealthOutput is read and dropped; the error quotes
	// at most 200 bytes of it.
	err = run(ctx, "sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; exit 1")
	if err == nil || len(err.Error()) > 260 || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("long output: %d bytes: %.300v", len(err.Error()), err)
	}
	check, err := config.CommandCheck([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := check(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestCommandCheckKillsGroup: when the check's context ends, the command
// and what it started are killed; what a command leaves behind when it
// exits by itself is killed too, in its process group or not.
func TestCommandCheckKillsGroup(t *testing.T) {
	const (
		escape       = `setsid sh -c 'echo $$ > "$0"; exec sleep 100' "$0" >/dev/null 2>&1 &`
		untilWritten = ` until [ -s "$0" ]; do sleep 0.01; done`
		escaped      = escape + untilWritten
	)
	for _, tc := range []struct {
		name, script string
		cancel       bool // cancel the check once the pid is written
	}{
		{"context ends", `sleep 100 & echo $! > "$0"; wait`, true},
		{"left behind", `sleep 100 >/dev/null 2>&1 & echo $! > "$0"`, false},
		// Out of the command's process group and session: the process
		// writes its pid once it has left them, and the command exits
		// only after that.
		{"setsid, context ends", escaped + `; wait`, true},
		{"setsid, left behind", escaped, false},
		// A daemon: its parent exits at once, so it is re-parented
		// (to init, or the nearest subreaper) before the command exits.
		{"daemon", `(` + escape + `);` + untilWritten, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			check, err := config.CommandCheck([]string{"sh", "-c", tc.script, pidFile})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- check(ctx) }()
			var raw []byte
			// The pid is written by the time the command has started its
			// child, however busy the machine (a minute at most).
			electiontesting.WaitFor(t, time.Minute, "the command's child's pid", func() bool {
				raw, err = os.ReadFile(pidFile)
				return err == nil && strings.HasSuffix(string(raw), "\n")
			})
			if tc.cancel {
				cancel()
			}
			err = <-errc
			if tc.cancel && !errors.Is(err, context.Canceled) {
				t.Errorf("check: %v, want the context's error", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			// Killed by the check (a zombie until init reaps it, if it does).
			deadline := time.Now().Add(30 * time.Second)
			for processAlive(pid) {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("process %d the command started is still running", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(raw), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestHTTPCheck(t *testing.T) {
	const pw = "hunter2-http-secret"
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere?token="+pw, http.StatusFound)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer srv.Close()
	withCreds := func(path string) string {
		return strings.Replace(srv.URL, "://", "://user:"+pw+"@", 1) + path + "?token=" + pw
	}
	check := func(ctx context.Context, url string) error {
		t.Helper()
		c, err := config.HTTPCheck(url)
		if err != nil {
			t.Fatal(err)
		}
		err = c(ctx)
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("error quotes the URL: %v", err)
		}
		return err
	}
	ctx := context.Background()
	if err := check(ctx, withCreds("/ok")); err != nil {
		t.Errorf("200: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := check(ctx, withCreds("/ok")); err == nil || err.Error() != "health http: status 503" {
		t.Errorf("503: %v", err)
	}
	if err := check(ctx, withCreds("/redirect")); err == nil || err.Error() != "health http: status 302" {
		t.Errorf("redirect: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := check(short, withCreds("/slow")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow: %v", err)
	}
	url := withCreds("/ok")
	srv.Close()
	if err := check(ctx, url); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("closed server: %v", err)
	}
	for _, bad := range []string{"", "ftp://h/", "http://", "http//x", "/p", "http://user:" + pw + "@[::1/"} {
		if _, err := config.HTTPCheck(bad); !errors.Is(err, config.ErrInvalidValue) || strings.Contains(err.Error(), pw) {
			t.Errorf("HTTPCheck(%q): %v", bad, err)
		}
	}
}

// startDocument starts an app (real time) running the document, stopped
// when the test ends.
func startDocument(t *testing.T, document string) (electors, *fxtest.App) {
	t.Helper()
	opt, err := config.Load([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	var es electors
	app := fxtest.New(t, opt, fx.Populate(&es))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return es, app
}

// TestHealthGatesDocumentElections: an election whose health command
// fails never leads and reports why; one whose command passes leads.
func TestHealthGatesDocumentElections(t *testing.T) {
	health := func(prog string) string {
		return `"health": {"command": ["` + prog + `"], "interval": "2s", "threshold": 1}`
	}
	es, _ := startDocument(t, doc(
		`{"name": "sick", `+timing+`, `+health("false")+`, "backend": `+mem+`}`,
		`{"name": "well", `+timing+`, `+health("true")+`, "backend": `+mem+`}`,
	))
	byName := map[string]*fxelection.Elector{}
	for _, e := range es.All {
		byName[e.Status().Election] = e
	}
	sick, well := byName["sick"], byName["well"]
	deadline := time.Now().Add(30 * time.Second)
	sickErr := func() string {
		if err := sick.Status().HealthError; err != nil {
			return err.Error()
		}
		return ""
	}
	// A check cut short by its interval on a busy machine fails too, with
	// another message: wait for one that ran to its end.
	for !well.IsLeader() || !strings.Contains(sickErr(), "health command: exit status 1") {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: well leads %v; sick's health error %v", well.IsLeader(), sick.Status().HealthError)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := sick.Status()
	if s.Healthy || s.Leading {
		t.Errorf("sick: healthy %v, leading %v, error %v", s.Healthy, s.Leading, s.HealthError)
	}
	if s := well.Status(); !s.Healthy || s.HealthError != nil {
		t.Errorf("well: healthy %v, error %v", s.Healthy, s.HealthError)
	}
}

// TestExitOnLossDocument: exit_on_loss shuts the app down with exit code 1
// when the election's leader resigns.
func TestExitOnLossDocument(t *testing.T) {
	es, app := startDocument(t, doc(`{"name": "a", "exit_on_loss": true, `+timing+`, "backend": `+mem+`}`))
	done := app.Wait()
	e := es.All[0]
	for deadline := time.Now().Add(30 * time.Second); !e.IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 30s")
		}
	}
	if err := e.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case sig := <-done:
		if sig.ExitCode != 1 {
			t.Errorf("shutdown with exit code %d, want 1", sig.ExitCode)
		}
	case <-time.After(30 * time.Second):
		t.Error("no shutdown 30s after Resign")
	}
}

// TestHealthMarshalRedacts: printing a document shows no credentials of
// its health URL or command.
func TestHealthMarshalRedacts(t *testing.T) {
	const pw = "hunter2-marshal-secret"
	h := config.Health{
		HTTP:     "https://user:" + pw + "@127.0.0.1/healthz?token=" + pw,
		Command:  []string{"check", "--password=" + pw},
		Interval: config.Duration(time.Second),
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pw) || !strings.Contains(string(raw), `"interval":"1s"`) {
		t.Errorf("marshalled %s", raw)
	}
}
