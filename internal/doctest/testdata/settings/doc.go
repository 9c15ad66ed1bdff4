// Package settings is a test package for DocSays and DocSettings: its doc
// states a default of 5s and lists
// its module's settings.
//
// # Configuration
//
//   - addr (required, a host:port): the server.
//   - username, password (secret): credentials.
//   - prefix: the key prefix, default "x:".
//
// # Other
//
//   - notasetting: this section is not read.
package settings
