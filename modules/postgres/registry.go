package pglease

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
)

func init() {
	fxelection.RegisterBackend(fxelection.BackendModule{
		Name: "postgres",
		Doc: "PostgreSQL lease table; settings: dsn (required, pgx connection string or URL), " +
			"table, schema, channel, skip_create_table, disable_push",
		New: newFromSettings,
	})
}

// newFromSettings builds a backend with a pool of its own, closed by the
// backend's Close. The DSN's password never appears in its errors.
func newFromSettings(ctx context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	dsn, err := s.Required("dsn")
	if err != nil {
		return nil, err
	}
	opts := Options{
		Table:   s.String("table", ""),
		Schema:  s.String("schema", ""),
		Channel: s.String("channel", ""),
	}
	if opts.SkipCreateTable, err = s.Bool("skip_create_table", false); err != nil {
		return nil, err
	}
	if opts.DisablePush, err = s.Bool("disable_push", false); err != nil {
		return nil, err
	}
	if _, err := opts.normalize(settingLabel); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// Not %w: the parse error may quote the DSN.
		return nil, fmt.Errorf("setting %q: %s", "dsn", fxelection.Redact(err.Error(), passwords(dsn)...))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting %q: %s", "dsn", fxelection.Redact(err.Error(), passwords(dsn)...))
	}
	b, err := New(pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	b.owned = pool
	return b, nil
}

// settingLabel names an Options field by its registry setting.
func settingLabel(field string) string {
	switch field {
	case "Table":
		return `setting "table"`
	case "Schema":
		return `setting "schema"`
	case "Channel":
		return `setting "channel"`
	}
	return optionLabel(field)
}

// passwords returns the candidate passwords in dsn, raw and decoded, found
// by a URL parse, by key=value scanning and by a lenient look at a URL's
// user info (for URLs too broken to parse).
func passwords(dsn string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if dec, err := url.PathUnescape(s); err == nil && dec != s {
			out = append(out, dec)
		}
		if enc := url.QueryEscape(s); enc != s {
			out = append(out, enc)
		}
	}
	if u, err := url.Parse(dsn); err == nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
		for _, k := range []string{"password", "sslpassword"} {
			for _, v := range u.Query()[k] {
				add(v)
			}
		}
	}
	// Lenient user info: scheme://user:password@host…
	if _, rest, ok := strings.Cut(dsn, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				add(pw)
			}
		}
	}
	// key=value form and URL query parameters: password=… / sslpassword=…
	for _, key := range []string{"password=", "sslpassword="} {
		for rest := dsn; ; {
			i := strings.Index(rest, key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			v := rest
			if strings.HasPrefix(v, "'") {
				v = v[1:]
				if end := strings.Index(v, "'"); end >= 0 {
					v = v[:end]
				}
			} else if end := strings.IndexAny(v, " &"); end >= 0 {
				v = v[:end]
			}
			add(v)
		}
	}
	return out
}
