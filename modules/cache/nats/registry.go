package natslease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fxelection/fxelection/fxelection"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// Settings keys read by the "nats" registry entry.
const (
	SettingURL      = "url"      // server URLs, comma-separated (nats://host:4222). Required.
	SettingUsername = "username" // user name.
	SettingPassword = "password" // password; never logged or put in errors.
	SettingToken    = "token"    // authentication token; never logged or put in errors.
	SettingBucket   = "bucket"   // KV bucket, created if missing. Default "fxelection".
	SettingReplicas = "replicas" // replicas of a bucket it creates (1–5). Default 1.
	SettingPrefix   = "prefix"   // cachelease.Options.KeyPrefix. Default "fxelection.".
	SettingPush     = "push"     // "false" disables push wake-up (KV watch). Default true.
)

func init() {
	fxelection.RegisterBackend(fxelection.BackendModule{
		Name: "nats",
		Doc: "NATS JetStream KV (Create/Update on revision, observed-time expiry, watch wake-up); settings: url (required), " +
			"username, password, token, bucket, replicas, prefix, push",
		New: NewFromSettings,
	})
}

// NewFromSettings builds a Backend with a connection of its own from
// configuration (the keys are the Setting* constants). The connection is
// made in the background and retried, so a server that is down at start is
// reported by the elector's first operations, not here; the bucket is
// created on first use if missing (and again if it disappears). The
// returned Backend owns the connection and implements io.Closer. Errors
// never contain the password, the token or URL credentials.
func NewFromSettings(_ context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	url, err := s.Required(SettingURL)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, u := range strings.Split(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("setting %q is required", SettingURL)
	}
	bucket := s.String(SettingBucket, DefaultBucket)
	if !ValidBucket(bucket) {
		return nil, fmt.Errorf("setting %q: %w", SettingBucket, ErrBucketRequired)
	}
	replicas, err := s.Int(SettingReplicas, 1)
	if err != nil {
		return nil, err
	}
	if replicas < 1 || replicas > 5 {
		return nil, fmt.Errorf("setting %q: must be 1 to 5", SettingReplicas)
	}
	push, err := s.Bool(SettingPush, true)
	if err != nil {
		return nil, err
	}
	secrets := []string{s[SettingPassword], s[SettingToken]}
	opts := []nats.Option{
		nats.Name("fxelection"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(2 * time.Second),
		// The client's own error logging would print connection URLs.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	if user := s.String(SettingUsername, ""); user != "" || s[SettingPassword] != "" {
		opts = append(opts, nats.UserInfo(user, s[SettingPassword]))
	}
	if tok := s[SettingToken]; tok != "" {
		opts = append(opts, nats.Token(tok))
	}
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	if err != nil {
		return nil, fxelection.RedactError(fmt.Errorf("setting %q: connect: %w", SettingURL, err), secrets...)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fxelection.RedactError(fmt.Errorf("jetstream: %w", err), secrets...)
	}
	store, err := NewBucketStore(js, jetstream.KeyValueConfig{Bucket: bucket, Replicas: replicas, Description: "fxelection leases"})
	if err != nil {
		nc.Close()
		return nil, err
	}
	b, err := backendOn(store, cachelease.Options{
		KeyPrefix:   s.String(SettingPrefix, ""),
		DisablePush: !push,
		Secrets:     secrets,
	})
	if err != nil {
		nc.Close()
		if errors.Is(err, cachelease.ErrInvalidPrefix) {
			return nil, fmt.Errorf("setting %q: %w", SettingPrefix, err)
		}
		return nil, err
	}
	return &ownedBackend{Backend: b, nc: nc}, nil
}

// ownedBackend is a Backend that owns its connection.
type ownedBackend struct {
	*cachelease.Backend
	nc *nats.Conn
}

var (
	_ fxelection.Backend  = (*ownedBackend)(nil)
	_ fxelection.Notifier = (*ownedBackend)(nil)
	_ io.Closer           = (*ownedBackend)(nil)
)

// Close stops push wake-up and closes the connection. Stop the electors
// that use the Backend first.
func (o *ownedBackend) Close() error {
	_ = o.Backend.Close()
	o.nc.Close()
	return nil
}
