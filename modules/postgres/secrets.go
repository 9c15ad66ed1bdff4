package pglease

import (
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// dsnSecrets returns every form in which dsn's passwords may appear in an
// error: the password pgx resolves (when dsn parses; this includes
// PGPASSWORD and passfile passwords), the values of password and
// sslpassword in key=value form as libpq reads them (spaces or tabs around
// "=", single quotes, backslash escapes; raw and unescaped), a URL's user
// info and query parameters, and a lenient look at the user info of URLs
// too broken to parse. Each is given raw, percent-decoded and
// percent-encoded.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(v string) {
		if v == "" {
			return
		}
		out = append(out, v)
		if dec, err := url.PathUnescape(v); err == nil && dec != v {
			out = append(out, dec)
		}
		if dec, err := url.QueryUnescape(v); err == nil && dec != v {
			out = append(out, dec)
		}
		if enc := url.QueryEscape(v); enc != v {
			out = append(out, enc)
		}
		if enc := url.PathEscape(v); enc != v {
			out = append(out, enc)
		}
	}
	if dsn == "" {
		return nil
	}
	if cfg, err := pgconn.ParseConfig(dsn); err == nil {
		add(cfg.Password)
		if v, ok := cfg.RuntimeParams["sslpassword"]; ok {
			add(v)
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	if _, rest, ok := strings.Cut(dsn, "://"); ok {
		host := rest
		if i := strings.IndexAny(host, "/?#"); i >= 0 && strings.LastIndex(host[:i], "@") < 0 {
			host = host[:i]
		}
		if at := strings.LastIndex(host, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(host[:at], ":"); ok {
				add(pw)
			}
		}
		if _, q, ok := strings.Cut(rest, "?"); ok {
			for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
				k, v, _ := strings.Cut(kv, "=")
				if k = strings.ToLower(k); k == "password" || k == "sslpassword" {
					add(v)
				}
			}
		}
	}
	for _, kv := range keywordValues(dsn) {
		if k := strings.ToLower(kv.key); k == "password" || k == "sslpassword" {
			add(kv.raw)
			add(kv.value)
			add(strings.Trim(kv.raw, "'"))
		}
	}
	return out
}

// keywordValue is one key=value pair of a libpq connection string: raw as
// written (quotes and escapes included), value as libpq reads it.
type keywordValue struct{ key, raw, value string }

// keywordValues reads s as a libpq key=value connection string, leniently:
// whitespace (spaces, tabs, newlines) around "=", values single-quoted or
// bare, backslash escapes in both. It never fails; on a malformed string it
// returns the pairs it could read, and a value that runs to the end.
func keywordValues(s string) []keywordValue {
	var out []keywordValue
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		start := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[start:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			if i == start {
				i++ // skip a stray byte
			}
			continue
		}
		i++ // '='
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		vstart := i
		var val strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
			if i < len(s) {
				i++ // closing quote
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
		}
		out = append(out, keywordValue{key: key, raw: s[vstart:i], value: val.String()})
	}
	return out
}
