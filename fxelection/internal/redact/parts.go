package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// urlScheme starts a URL-shaped connection string.
var urlScheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*)://`)

// secretKey is a key whose value is a secret (the keys keyValuePattern
// knows).
var secretKey = regexp.MustCompile(`(?i)^[a-z0-9_.-]*?(?:password|passwd|pass|pwd|accountkey|sharedaccesssignature|sig|secret|token|access_?key|secret_?key|api_?key)$`)

// minPart is the shortest part that can be masked by itself (shorter
// ones would mask common letters everywhere).
const minPart = 4

// Parts returns the parts of a secret value that are secret when the value
// is a connection string, so that masking it elsewhere masks those and not
// its scheme, host, user or database names (a DSN's "postgres" is also a
// module's name):
//
//   - a URL (scheme://…): its password, or its whole userinfo when it has
//     none and the scheme is not postgres or postgresql (other schemes,
//     NATS's among them, carry a token there), and the values of
//     secret-bearing keys in its query;
//   - key=value pairs (libpq DSNs, Azure connection strings): the values of
//     password, AccountKey, SharedAccessSignature, sig, token and the like.
//
// Each part comes as written and, if different, URL-decoded. ok is false
// when s is neither (no secret-bearing key in a key=value text), or when a
// part is shorter than 4 bytes: the whole value is then the secret. A URL
// with no secret part gives no parts and ok.
func Parts(s string) (parts []string, ok bool) {
	add := func(v string) {
		if v == "" {
			return
		}
		parts = append(parts, v)
		for _, dec := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
			if d, err := dec(v); err == nil && !slices.Contains(parts, d) {
				parts = append(parts, d)
			}
		}
	}
	if m := urlScheme.FindStringSubmatch(s); m != nil {
		rest := s[len(m[0]):]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			userinfo := rest[:at]
			rest = rest[at+1:]
			if _, pw, found := strings.Cut(userinfo, ":"); found {
				add(pw)
			} else if scheme := strings.ToLower(m[1]); scheme != "postgres" && scheme != "postgresql" {
				add(userinfo)
			}
		}
		if _, q, found := strings.Cut(rest, "?"); found {
			for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
				if k, v, _ := strings.Cut(kv, "="); secretKey.MatchString(k) {
					add(v)
				}
			}
		}
	} else {
		for _, loc := range keyValuePattern.FindAllStringSubmatchIndex(s, -1) {
			v := s[loc[6]:loc[7]]
			if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			add(v)
		}
		if parts == nil {
			return nil, false
		}
	}
	for _, p := range parts {
		if len(p) < minPart {
			return nil, false
		}
	}
	return parts, true
}
