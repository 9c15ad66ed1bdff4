package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// redisLog routes go-redis's own log lines (pool dial failures and the
// like) to the app's logger at debug level, redacted, instead of go-redis's
// default: the standard library's logger on stderr, outside the app's
// format and redaction. The electors already report every failure a line
// would describe, as events and errors.
//
// go-redis has no per-client logger, only redis.SetLogger, which is
// process-wide. So the library's modules leave it alone (a library must
// not change a process global), and the program, which owns the process,
// sets it here.
type redisLog struct {
	log     *slog.Logger
	secrets []string
}

// Printf implements go-redis's logging interface.
func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	if !r.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	msg := oneLine(backendkit.RedactText(fmt.Sprintf(format, v...), r.secrets...))
	r.log.DebugContext(ctx, "redis client", "line", msg)
}

// routeRedisLogs installs redisLog with the app's logger and secrets. run
// calls it before every command that can dial a store, status included.
func routeRedisLogs(log *slog.Logger, secrets []string) {
	redis.SetLogger(redisLog{log: log, secrets: secrets})
}
