package observe

import (
	"fmt"
	"io"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns a JSON logger writing to w at the given level (debug,
// info, warn or error). With flush > 0 lines are buffered (256 KiB) and
// written at least every flush; stop writes what is pending and ends the
// buffer's goroutine (call it before exiting). Warnings and errors are
// written at once either way.
func NewLogger(w io.Writer, level Level, flush time.Duration) (log *zap.Logger, stop func(), err error) {
	lvl := [...]zapcore.Level{zapcore.DebugLevel, zapcore.InfoLevel, zapcore.WarnLevel, zapcore.ErrorLevel}[level]
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeDuration = millis
	// w is never synced: a flush hands the lines to the kernel, which is
	// all a log stream needs. The buffer syncs its writer on every flush
	// while it holds the lock every line takes, so the fsync of a stderr
	// sent to a file held each request's access line for as long as the
	// disk took, once a second.
	ws := zapcore.Lock(zapcore.AddSync(writerOnly{w}))
	stop = func() { _ = ws.Sync() }
	if flush > 0 {
		buf := &zapcore.BufferedWriteSyncer{WS: ws, Size: 256 << 10, FlushInterval: flush}
		ws, stop = buf, func() { _ = buf.Stop() }
	}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), ws, lvl)
	if flush > 0 {
		// Warnings and errors are not held back.
		urgent := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(writerOnly{w})), zapcore.WarnLevel)
		core = zapcore.NewTee(levelBelow{core, zapcore.WarnLevel}, urgent)
	}
	return zap.New(core), stop, nil
}

// writerOnly hides its writer's Sync method (an *os.File's fsync).
type writerOnly struct{ io.Writer }

// levelBelow passes only entries below a level to its core.
type levelBelow struct {
	zapcore.Core
	below zapcore.Level
}

func (l levelBelow) Enabled(lvl zapcore.Level) bool { return lvl < l.below && l.Core.Enabled(lvl) }

func (l levelBelow) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !l.Enabled(e.Level) {
		return ce
	}
	return l.Core.Check(e, ce)
}

func (l levelBelow) With(fields []zapcore.Field) zapcore.Core {
	return levelBelow{l.Core.With(fields), l.below}
}

// millis encodes durations as fractional milliseconds, e.g. 0.412.
func millis(d time.Duration, enc zapcore.PrimitiveArrayEncoder) {
	enc.AppendFloat64(float64(d.Microseconds()) / 1000)
}

// Level is the least level logged.
type Level uint8

// Levels.
const (
	Debug Level = iota
	Info
	Warn
	Error
)

var levelNames = []string{"debug", "info", "warn", "error"}

func (l Level) String() string { return levelNames[l] }

// Names are the configured names of the levels.
func (Level) Names() []string { return slices.Clone(levelNames) }

// Parse reads a configured level: debug, info, warn or error.
func (Level) Parse(s string) (Level, error) {
	for i, n := range levelNames {
		if n == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("must be debug, info, warn or error, got %q", s)
}
