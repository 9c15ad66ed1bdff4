// Package configtest holds end-to-end tests of configuration documents
// (package fxelection/config) on real backends: a document naming several
// elections on Redis and PostgreSQL becomes a running fx app. It has no
// non-test API.
package configtest
