// Package configs holds example configuration documents, one per backend
// module (redis.json, postgres.json, s3.json, blob.json, memory.json), for
// `example-app --config FILE` and package fxelection/config. Secrets come
// from {env.NAME} and {file.PATH} placeholders, never from the files. The
// package's tests keep every file valid, and run the memory, Redis and
// PostgreSQL files against real servers.
package configs
