package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/handover"
)

// The admin endpoint, as Caddy's: GET /config returns the running document
// (config.Document.RedactedJSON: secrets and placeholder values masked),
// POST /load replaces it. A load's body is a whole document (JSON, or YAML
// with Content-Type application/yaml), at most config.MaxDocumentBytes,
// parsed with the same rules as --config except placeholders: {env.NAME}
// and {file.PATH} are refused unless --admin-allow-placeholders, which
// resolves them in this process (whoever may load a document then reads
// any file or variable the process can). It is checked before anything
// changes:
//
//   - 200: applied; what did not change kept running (config.Runtime.Apply);
//   - 400: a bad document, nothing changed; one problem per line, each
//     naming its JSON path and never a value (a refused placeholder is
//     named by its kind);
//   - 415: neither JSON nor YAML (a browser's cross-site form cannot send
//     either without a preflight, which the endpoint does not answer);
//   - 500: the document is valid but applying it failed (a backend module
//     could not be provisioned: nothing changed; or an election could not
//     release its lease, or a module's clean-up failed: the document runs).
//
// POST /resign hands an election's leadership over, as
// fxelection.Elector.ResignTo does (or gives it up, as Resign, without
// "to"). Its parameters, in the query or a form body (at most 64 KiB):
// election, the election's name (required), and to, the successor's
// identity (optional). Every elector of that name in this process that
// leads resigns, each within its stop_timeout and the request's life; the
// answer is text/plain:
//
//   - 200: "handed over to ID", "resigned", or "not leading: nothing to
//     do" when no elector of that name leads here;
//   - 400: no election, or a bad successor (not a valid identity, or the
//     leader itself); the problem is described, never quoted;
//   - 403: a cross-origin browser request (http.CrossOriginProtection: a
//     web page's form cannot make the leader resign);
//   - 404: no running election has that name;
//   - 500: the store failed or the time ran out (the leadership has ended
//     all the same; the lease may stay held until it expires);
//   - 503: the election stopped meanwhile (a load replaced it).
//
// Other methods than POST on /load and /resign answer 405.
//
// Who may use it: by default it is a unix socket (--admin unix/PATH) that
// only this user may connect to (--admin-socket-mode); on TCP every request
// must carry the token (Authorization: Bearer …; 401 without it or with
// another, compared in constant time), and a TCP endpoint without a token
// is refused at start. On a loopback address the endpoint answers only
// requests whose Host is a loopback address or localhost, so a web page
// cannot reach it through a DNS name rebound to 127.0.0.1.

// adminTimeouts bound the admin endpoint's connections: a body of up to
// MaxDocumentBytes, and a load that provisions modules and stops elections
// before it answers.
var adminTimeouts = httpTimeouts{readHeader: 5 * time.Second, read: 30 * time.Second, write: 5 * time.Minute, idle: 60 * time.Second}

// adminEndpoint serves the admin API for the graph's runtime as s says
// (none when s.addr is "") between start and stop.
func adminEndpoint(s adminSettings, log *slog.Logger) fx.Option {
	if s.addr == "" {
		return fx.Options()
	}
	_, unix := socketPath(s.addr)
	policy := adminPolicy{localOnly: !unix && !s.remote, token: s.token, allowPlaceholders: s.allowPlaceholders}
	return fx.Invoke(func(lc fx.Lifecycle, rt *config.Runtime) {
		serve(lc, "--admin "+s.addr, func() (net.Listener, error) { return listenAdmin(s) }, adminHandler(rt, policy, log), adminTimeouts)
	})
}

// adminPolicy is what the admin API requires of a request and allows in a
// loaded document.
type adminPolicy struct {
	// localOnly refuses requests whose Host is not a loopback name.
	localOnly bool
	// token, if not "", must be every request's bearer token.
	token string
	// allowPlaceholders resolves placeholders in loaded documents (else
	// they are refused).
	allowPlaceholders bool
}

// adminHandler is the admin API over rt under policy p.
func adminHandler(rt *config.Runtime, p adminPolicy, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		doc := rt.Document()
		if doc == nil {
			http.Error(w, "no document running", http.StatusServiceUnavailable)
			return
		}
		raw, err := doc.RedactedJSON()
		if err != nil {
			http.Error(w, "cannot show the document", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(raw, '\n'))
	})
	mux.HandleFunc("POST /load", func(w http.ResponseWriter, r *http.Request) {
		code, msg := load(r, rt, p.allowPlaceholders)
		if code == http.StatusOK {
			log.Info("configuration loaded", "elections", len(rt.Electors()))
		} else {
			log.Warn("configuration not loaded", "status", code)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, msg+"\n")
	})
	mux.Handle("POST /resign", http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, msg := resign(r, rt, log)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, msg+"\n")
	})))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.localOnly && !loopbackHost(r.Host) {
			http.Error(w, "admin endpoint: Host must be a loopback address or localhost", http.StatusForbidden)
			return
		}
		if p.token != "" && !authorized(r, p.token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="example-app admin"`)
			http.Error(w, "admin endpoint: a valid token is required (Authorization: Bearer …)", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// load reads, checks and applies a POST /load body and returns the status
// and the message to answer with. Placeholders are refused (nothing is
// looked up or read) unless allowPlaceholders.
func load(r *http.Request, rt *config.Runtime, allowPlaceholders bool) (int, string) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	yaml := false
	switch ct {
	case "application/json":
	case "application/yaml", "application/x-yaml", "text/yaml":
		yaml = true
	default:
		return http.StatusUnsupportedMediaType, "Content-Type must be application/json or application/yaml"
	}
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, config.MaxDocumentBytes))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return http.StatusRequestEntityTooLarge, fmt.Sprintf("document larger than %d bytes", config.MaxDocumentBytes)
		}
		return http.StatusBadRequest, "cannot read the document"
	}
	var doc *config.Document
	loader := config.Loader{RefusePlaceholders: !allowPlaceholders}
	if yaml {
		doc, err = loader.ParseYAML(raw)
	} else {
		doc, err = loader.Parse(raw)
	}
	if err == nil {
		err = config.ValidateForRuntime(doc)
	}
	if err != nil {
		lines := documentLines(err)
		if errors.Is(err, config.ErrPlaceholderRefused) {
			lines = append(lines, "placeholders are resolved in a loaded document only when example-app runs with --admin-allow-placeholders")
		}
		return http.StatusBadRequest, strings.Join(lines, "\n")
	}
	// The client going away does not cut a load short; its own bound
	// does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), startTimeout+stopTimeout(rt.Electors()))
	defer cancel()
	if err := rt.Apply(ctx, doc); err != nil {
		return http.StatusInternalServerError, "load failed: " + strings.Join(documentLines(err), "\n")
	}
	return http.StatusOK, fmt.Sprintf("loaded: %s running", count(len(rt.Electors()), "election"))
}

// maxResignForm bounds a POST /resign body.
const maxResignForm = 64 << 10

// resign acts on a POST /resign request and returns the status and the
// message to answer with. The electors of the election named by the
// "election" parameter that lead when it is called resign (ResignTo the
// "to" parameter, if any), one after the other, each bounded by its
// StopTimeout but not by the client: a client that goes away mid-way must
// not leave a lease neither released nor handed over. The first failure
// decides the answer.
func resign(r *http.Request, rt *config.Runtime, log *slog.Logger) (int, string) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxResignForm)
	if err := r.ParseForm(); err != nil {
		return http.StatusBadRequest, "cannot read the form"
	}
	name, to := r.Form.Get("election"), r.Form.Get("to")
	if name == "" {
		return http.StatusBadRequest, "election: required"
	}
	var picked []*fxelection.Elector
	for _, e := range rt.Electors() {
		if e.Status().Election == name {
			picked = append(picked, e)
		}
	}
	if len(picked) == 0 {
		return http.StatusNotFound, "no such election"
	}
	// A bad identity is bad whether or not this process leads; ResignTo
	// checks it again, and that it is not the leader's own.
	if _, problem := backendkit.CheckConfigTexts(name, to, nil); to != "" && problem != "" {
		return http.StatusBadRequest, "to: bad successor: " + problem
	}
	// The leaders are those before any call: a hand-over makes the
	// successor, which may be one of picked, lead.
	var leaders []*fxelection.Elector
	for _, e := range picked {
		if e.IsLeader() {
			leaders = append(leaders, e)
		}
	}
	if len(leaders) == 0 {
		return http.StatusOK, "not leading: nothing to do"
	}
	for _, e := range leaders {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), e.Config().StopTimeout)
		var err error
		if to != "" {
			err = e.ResignTo(ctx, to)
		} else {
			err = e.Resign(ctx)
		}
		cancel()
		st := e.Status()
		switch {
		case errors.Is(err, handover.ErrBadSuccessor):
			return http.StatusBadRequest, "to: bad successor: " + badSuccessor(err)
		case errors.Is(err, fxelection.ErrNotRunning):
			return http.StatusServiceUnavailable, "election not running: it stopped meanwhile"
		case err != nil:
			log.Warn("admin resign failed", "election", st.Election, "identity", st.Identity, "error", err)
			return http.StatusInternalServerError, "resign failed: " + oneLine(backendkit.RedactText(err.Error()))
		}
		log.Info("admin resign", "election", st.Election, "identity", st.Identity, "successor", to)
	}
	if to != "" {
		return http.StatusOK, "handed over to " + show(to)
	}
	return http.StatusOK, "resigned"
}

// badSuccessor is what is wrong with a successor ResignTo refused
// (handover.ErrBadSuccessor), without the library's prefix. The library
// describes the problem and never quotes the identity.
func badSuccessor(err error) string {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, handover.ErrBadSuccessor.Error()+": "); ok {
		msg = rest
	}
	return oneLine(backendkit.RedactText(msg))
}

// documentLines is one line per problem of a config error (each naming
// its JSON path), or the error on one line, redacted.
func documentLines(err error) []string {
	if lines := problemLines("", err); lines != nil {
		return lines
	}
	if errors.As(err, new(*config.PathError)) {
		return []string{oneLine(err.Error())}
	}
	return []string{oneLine(backendkit.RedactText(err.Error()))}
}

// loopbackHost reports whether a request's Host (host or host:port) names
// a loopback address or localhost.
func loopbackHost(host string) bool {
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "0")
	}
	return loopback(host)
}

// maxAdminAnswer bounds how much of the admin endpoint's answer reload
// reads.
const maxAdminAnswer = 64 << 10

// reloadTimeout bounds a reload's request: the server provisions new
// modules and stops the elections that go before it answers.
const reloadTimeout = 10 * time.Minute

// errAdminUnreachable is reload's error when the admin endpoint cannot be
// reached (exit 1).
var errAdminUnreachable = errors.New("admin endpoint unreachable")

// runReload is "example-app reload --config FILE [--admin ADDR]", as
// Caddy's "caddy reload": it reads and checks the file as run and validate
// do (a bad one is bad input, exit 2, and is not sent), then POSTs the
// bytes it checked to ADDR's /load. Exit 0 when the server applied it, 2
// when the server found it bad (its lines, each naming the file and a JSON
// path), 1 when the server cannot be reached or failed to apply it.
func runReload(ctx context.Context, o options, w io.Writer) error {
	raw, _, err := loadConfig(o)
	if err != nil {
		return err
	}
	token, err := o.adminCredential()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reloadTimeout)
	defer cancel()
	client, base := adminClient(o.adminAddr)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/load", bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("--admin: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if config.IsYAMLFile(o.configFile) {
		req.Header.Set("Content-Type", "application/yaml")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s: %w", errAdminUnreachable, o.adminAddr, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		if l != "" {
			lines = append(lines, oneLine(l))
		}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		fmt.Fprintf(w, "%s: %s\n", o.configFile, strings.Join(lines, "; "))
		return nil
	case http.StatusBadRequest:
		for i, l := range lines {
			lines[i] = o.configFile + ": " + l
		}
		return usageError{strings.Join(lines, "\nexample-app: ")}
	}
	return fmt.Errorf("--admin %s: %s: %s", o.adminAddr, resp.Status, strings.Join(lines, "; "))
}
