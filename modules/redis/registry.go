package redislease

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
)

// Settings keys read by the "redis" registry entry.
const (
	SettingAddr            = "addr"             // host:port; comma-separated for Cluster or Sentinel. Required. Not a URL.
	SettingMaster          = "master"           // Sentinel master name; addr then lists the Sentinels.
	SettingUsername        = "username"         // ACL user name.
	SettingPassword        = "password"         // password; never logged or put in errors.
	SettingDB              = "db"               // database number (not with Cluster). Default 0.
	SettingTLS             = "tls"              // "true" to connect with TLS. Default false.
	SettingPrefix          = "prefix"           // Options.KeyPrefix. Default "fxelection:".
	SettingPush            = "push"             // "false" sets Options.DisablePush. Default true.
	SettingSequentialTerms = "sequential_terms" // "true" sets Options.SequentialTerms. Default false.
)

func init() {
	fxelection.RegisterBackend(fxelection.BackendModule{
		Name: "redis",
		Doc: "Redis (single node, Sentinel or Cluster); settings: addr (required), master, username, " +
			"password, db, tls, prefix, push, sequential_terms",
		New: NewFromSettings,
	})
}

// NewFromSettings builds a Backend with a client of its own from
// configuration (the keys are the Setting* constants). It does no I/O: a
// server that is down is reported by the elector's first operations. The
// returned Backend owns the client and implements io.Closer: Close stops
// push wake-up and closes the client. Errors never contain the password or
// the user name, and never quote the addr setting (which may be a URL with
// a password pasted in it by mistake: URLs are refused).
func NewFromSettings(ctx context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	b, err := newFromSettings(ctx, s)
	if err != nil {
		secrets := credentials(s[SettingUsername], s[SettingPassword])
		secrets = append(secrets, addrSecrets(s[SettingAddr])...)
		return nil, fxelection.RedactError(err, secrets...)
	}
	return b, nil
}

// addrSecrets returns what may be a password in an addr setting: the user
// info of a URL (or of anything with an '@' in it), whole and by parts.
func addrSecrets(addr string) []string {
	var out []string
	for _, a := range strings.Split(addr, ",") {
		if _, rest, ok := strings.Cut(a, "://"); ok {
			a = rest
		}
		at := strings.LastIndex(a, "@")
		if at < 0 {
			continue
		}
		info := a[:at]
		user, pw, _ := strings.Cut(info, ":")
		out = append(out, credentials(user, pw)...)
		if len(info) >= 4 {
			out = append(out, info)
		}
	}
	return out
}

func newFromSettings(_ context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	addr, err := s.Required(SettingAddr)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("setting %q is required", SettingAddr)
	}
	for i, a := range addrs {
		// The value is never quoted: a URL or user info may carry a password.
		if strings.Contains(a, "://") {
			return nil, fmt.Errorf("setting %q: address %d is a URL; give host:port, and the %q and %q settings",
				SettingAddr, i+1, SettingUsername, SettingPassword)
		}
		if _, _, err := net.SplitHostPort(a); err != nil || strings.ContainsAny(a, "@/") {
			return nil, fmt.Errorf("setting %q: address %d is not host:port", SettingAddr, i+1)
		}
	}
	db, err := s.Int(SettingDB, 0)
	if err != nil {
		return nil, err
	}
	if db < 0 {
		return nil, fmt.Errorf("setting %q: %d is negative", SettingDB, db)
	}
	useTLS, err := s.Bool(SettingTLS, false)
	if err != nil {
		return nil, err
	}
	push, err := s.Bool(SettingPush, true)
	if err != nil {
		return nil, err
	}
	sequential, err := s.Bool(SettingSequentialTerms, false)
	if err != nil {
		return nil, err
	}
	prefix := s.String(SettingPrefix, DefaultKeyPrefix)
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("setting %q: %q must not contain '{' or '}'", SettingPrefix, prefix)
	}
	master := s.String(SettingMaster, "")
	if db != 0 && len(addrs) > 1 && master == "" {
		return nil, fmt.Errorf("setting %q: Redis Cluster has only database 0", SettingDB)
	}
	opts := &redis.UniversalOptions{
		Addrs:                 addrs,
		MasterName:            master,
		Username:              s.String(SettingUsername, ""),
		Password:              s[SettingPassword],
		DB:                    db,
		ContextTimeoutEnabled: true,
	}
	if useTLS {
		// The server name is taken from each address when dialling.
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	client := redis.NewUniversalClient(opts)
	return &ownedBackend{Backend: New(client, Options{
		KeyPrefix:       prefix,
		DisablePush:     !push,
		SequentialTerms: sequential,
	})}, nil
}

// ownedBackend is a Backend that owns its client.
type ownedBackend struct {
	*Backend
}

var (
	_ fxelection.Backend  = (*ownedBackend)(nil)
	_ fxelection.Notifier = (*ownedBackend)(nil)
	_ io.Closer           = (*ownedBackend)(nil)
)

// Close stops push wake-up and closes the client. Stop the electors that
// use the Backend first.
func (o *ownedBackend) Close() error {
	o.shutdown()
	if err := o.client.Close(); err != nil {
		return o.redact(fmt.Errorf("close redis client: %w", err))
	}
	return nil
}
