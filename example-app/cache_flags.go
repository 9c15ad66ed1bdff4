package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	memcachedlease "github.com/fxelection/fxelection/modules/cache/memcached"
	natslease "github.com/fxelection/fxelection/modules/cache/nats"
)

// cacheOptions are the flags of the cache backends (memcached, nats).
type cacheOptions struct {
	memcachedAddr                              string
	natsURL, natsUser, natsPassword, natsToken string
	natsBucket                                 string
	natsReplicas                               int
}

func addCacheFlags(fs *flag.FlagSet, c *cacheOptions) {
	fs.StringVar(&c.memcachedAddr, "memcached-addr", "", "memcached servers host:port, comma-separated")
	fs.StringVar(&c.natsURL, "nats-url", "", "NATS server URLs, comma-separated (nats://host:4222)")
	fs.StringVar(&c.natsUser, "nats-username", "", "NATS user name")
	fs.StringVar(&c.natsPassword, "nats-password", "", "NATS password")
	fs.StringVar(&c.natsToken, "nats-token", "", "NATS authentication token")
	fs.StringVar(&c.natsBucket, "nats-bucket", natslease.DefaultBucket, "NATS JetStream KV bucket (created if missing)")
	fs.IntVar(&c.natsReplicas, "nats-replicas", 1, "replicas of the KV bucket when it is created (1-5)")
}

// validate checks the flags of backend, one of the cache backends.
func (c cacheOptions) validate(backend string, lease time.Duration) error {
	switch backend {
	case "memcached":
		if c.memcachedAddr == "" {
			return usagef("--memcached-addr is required for --backend memcached")
		}
		if lease > memcachedlease.MaxLease {
			return usagef("--lease (%v) must be at most %v for --backend memcached (memcached TTL limit)", lease, memcachedlease.MaxLease)
		}
	case "nats":
		if c.natsURL == "" {
			return usagef("--nats-url is required for --backend nats")
		}
		if !natslease.ValidBucket(c.natsBucket) {
			return usagef("--nats-bucket: %q is not a bucket name (A-Z a-z 0-9 _ -)", c.natsBucket)
		}
		if c.natsReplicas < 1 || c.natsReplicas > 5 {
			return usagef("--nats-replicas (%d) must be 1 to 5", c.natsReplicas)
		}
	}
	return nil
}

// settings are the registry settings of backend. They hold secrets: never
// log them.
func (c cacheOptions) settings(backend string) fxelection.Settings {
	switch backend {
	case "memcached":
		return fxelection.Settings{memcachedlease.SettingAddr: c.memcachedAddr}
	case "nats":
		return fxelection.Settings{
			natslease.SettingURL: c.natsURL, natslease.SettingUsername: c.natsUser,
			natslease.SettingPassword: c.natsPassword, natslease.SettingToken: c.natsToken,
			natslease.SettingBucket: c.natsBucket, natslease.SettingReplicas: fmt.Sprint(c.natsReplicas),
		}
	}
	return fxelection.Settings{}
}
