// Package batchtest holds the tests that configured elections renew in
// batches: a test binary of its own, because they register a counting
// backend module and import the Redis module, which would change the
// module lists other tests of package config check.
package batchtest
