// Command toolgate is the gateway: `toolgate [--config FILE]` serves the
// OpenAI-compatible API on the main listener and /metrics, /healthz,
// /readyz on the admin listener until SIGTERM or SIGINT, then drains;
// SIGHUP reloads the config. `toolgate check [--config FILE]` loads a
// config as the gateway would, prints every problem with its field path
// and exits 1, or says it is valid; it starts nothing. The program itself
// is internal/app; the demo is cmd/demo.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolgate/toolgate/internal/app"
)

func main() {
	// go-redis logs through one process-wide logger: main, which owns the
	// process, sends its lines to stderr as JSON like the gateway's own.
	redis.SetLogger(redisLog{zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.Lock(os.Stderr), zapcore.WarnLevel)).Named("redis")})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:], app.World{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr}); err != nil {
		fmt.Fprintln(os.Stderr, "toolgate:", err)
		os.Exit(1)
	}
}

// redisLog writes go-redis's log lines through zap.
type redisLog struct{ log *zap.Logger }

func (r redisLog) Printf(_ context.Context, format string, args ...any) {
	r.log.Warn(fmt.Sprintf(format, args...))
}
