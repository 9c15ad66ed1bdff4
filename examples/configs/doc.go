// Package configs holds example configuration documents, one per backend
// module (redis.json, postgres.json, s3.json, blob.json, memcached.json,
// nats.json, memory.json; etcd.json and zookeeper.json, checked by the
// tests of modules/etcd and modules/zookeeper), and
// elections.json, the README's document, which examples/configfile runs;
// for `example-app --config FILE` and package fxelection/config. Secrets
// and addresses come from {env.NAME} and {file.PATH} placeholders, never
// from the files. The package's tests keep every file valid, and run the
// memory, Redis and PostgreSQL files against real servers.
package configs
