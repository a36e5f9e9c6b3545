// Command toolgate is the gateway: `toolgate [--config FILE]` serves the
// OpenAI-compatible API on the main listener and /metrics, /healthz,
// /readyz on the admin listener until SIGTERM or SIGINT, then drains.
// `toolgate demo` runs the gateway on its embedded default config with a
// scripted client (see demo.go). `toolgate check [--config FILE]` loads a
// config as the gateway would, prints every problem with its field path
// and exits 1, or says it is valid; it starts nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/heapfloor"
	"github.com/toolgate/toolgate/internal/maxprocs"
	"github.com/toolgate/toolgate/internal/memlimit"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/internal/translate"
)

func main() {
	// go-redis logs through one process-wide logger: main, which owns the
	// process, sends its lines to stderr as JSON like the gateway's own.
	redis.SetLogger(redisLog{zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.Lock(os.Stderr), zapcore.WarnLevel)).Named("redis")})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "toolgate:", err)
		os.Exit(1)
	}
}

// check loads the config at path (the embedded default when empty) and
// reports whether it is valid: every problem, with its field path, is in
// the error.
func check(path string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.Load(path, getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: valid (%d upstreams, %d routes, %d client keys)\n", configName(path), len(cfg.Upstreams), len(cfg.Routes), len(cfg.Keys))
	if cfg.Responses.SealKey == "" && slices.ContainsFunc(cfg.Upstreams, func(u config.Upstream) bool { return u.Protocol.Value == translate.Responses }) {
		fmt.Fprintln(stdout, "note: responses.seal_key is not set: each process seals the encrypted reasoning it hands Responses clients with a secret made at start, so an item another replica handed out, or this one before a restart, goes back without its reasoning")
	}
	return nil
}

// run is the whole program with its world passed in. It serves until ctx
// ends, then drains in-flight requests for up to server.drain_timeout. Once
// both listeners are bound it prints one line to stdout:
//
//	toolgate listening on <main address> (admin <admin address>)
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolgate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", getenv("TOOLGATE_CONFIG"), "config file (default: $TOOLGATE_CONFIG, else the embedded default config)")
	listen := fs.String("listen", "", "main listener address, overriding the config's listen")
	adminListen := fs.String("admin-listen", "", "admin listener address, overriding the config's admin_listen")
	logFlush := fs.Duration("log-flush-interval", -1, "log.flush_interval override (0s: every line written at once)")
	command := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		command, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case command == "demo":
		return runDemo(ctx, stdout)
	case command == "check":
		return check(*configPath, getenv, stdout)
	case command != "":
		return fmt.Errorf("unknown command %q (the commands are check and demo)", command)
	}

	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *adminListen != "" {
		cfg.AdminListen = *adminListen
	}
	if *logFlush >= 0 {
		cfg.Log.FlushInterval = logFlush
	}
	log, stopLog, err := observe.NewLogger(stderr, cfg.Log.Level.Value, *cfg.Log.FlushInterval)
	if err != nil {
		return err
	}
	defer stopLog()

	// The memory the gateway may use: server.memory_limit, else the
	// container's. The runtime's soft memory limit is 90% of it, unless
	// GOMEMLIMIT is set, and the in-memory stores' default bounds shares
	// of it.
	if cfg.Server.MemoryLimit == 0 {
		if limit, ok := memlimit.Limit(memlimit.Root); ok {
			cfg.FitMemory(limit)
		}
	}
	if soft := memlimit.Apply(getenv, cfg.Server.MemoryLimit); soft > 0 {
		log.Info("memory limit", zap.Int64("memory_limit_bytes", cfg.Server.MemoryLimit), zap.Int64("gomemlimit_bytes", soft),
			zap.Int64("responses_max_bytes", cfg.Responses.MaxBytes), zap.Int64("reasoning_max_bytes", cfg.ReasoningMaxBytes()))
	}
	// The collector's goal stays at 8 MB at the least, unless GOGC is set.
	defer heapfloor.FromEnv(getenv, heapfloor.Default)()
	// One P while lightly loaded, the runtime's default once busy, unless
	// GOMAXPROCS is set.
	defer maxprocs.FromEnv(getenv, maxprocs.Default)()

	reg := prometheus.NewRegistry()
	metrics := observe.NewMetrics(reg, observe.MetricsOptions{HideKeyNames: !*cfg.Metrics.KeyLabels})
	tp, err := telemetry.New(ctx, telemetry.Options{Endpoint: cfg.Telemetry.OTLPEndpoint, Protocol: cfg.Telemetry.Protocol.Value}, getenv)
	if err != nil {
		return err
	}
	defer func() {
		// Spans still buffered are sent, for a few seconds at most.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()
	if tp.Enabled {
		log.Info("tracing on", zap.String("otlp_endpoint", cfg.Telemetry.OTLPEndpoint))
	}

	// Built-in simulators run on loopback ports for the gateway's lifetime.
	var sims []*http.Server
	defer func() {
		for _, s := range sims {
			s.Close()
		}
	}()
	startSims := func(cfg *config.Config) error {
		for i := range cfg.Upstreams {
			u := &cfg.Upstreams[i]
			if !u.Simulator {
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("start simulator %s: %w", u.Name, err)
			}
			s := &http.Server{Handler: sim.New(sim.Options{}), ReadHeaderTimeout: 10 * time.Second}
			sims = append(sims, s)
			go s.Serve(ln)
			u.URL = "http://" + ln.Addr().String() + "/v1"
			if u.Protocol.Value == translate.Gemini {
				u.URL += "beta" // the Gemini API's version
			}
		}
		return nil
	}
	if err := startSims(cfg); err != nil {
		return err
	}

	// The pending-request guard belongs to the server: it outlives reloads.
	pending := gateway.NewPending(cfg.Server, metrics)
	proc := process{log: log, metrics: metrics, pending: pending, tracer: tp}
	g, err := gateway.New(proc.options(cfg))
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	// The live gateway is swapped on SIGHUP; a request keeps the one it
	// started with until it ends.
	live := &liveHandler{}
	live.set(g)
	defer live.closeAll()

	mainLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	adminLn, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		mainLn.Close()
		return fmt.Errorf("admin_listen: %w", err)
	}
	errLog, _ := zap.NewStdLogAt(log.Named("http"), zap.WarnLevel)
	srv := gateway.NewServer(cfg.Server, live, pending, errLog)
	var ready atomic.Bool
	admin := &http.Server{
		Handler:           gateway.NewAdmin(reg, ready.Load, cfg.Server.Pprof),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          errLog,
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(mainLn) }()
	go func() { errc <- admin.Serve(adminLn) }()
	ready.Store(true)

	upstreams := make([]string, 0, len(cfg.Upstreams))
	for _, u := range cfg.Upstreams {
		upstreams = append(upstreams, u.Name)
	}
	log.Info("toolgate started", zap.String("listen", mainLn.Addr().String()),
		zap.String("admin_listen", adminLn.Addr().String()), zap.String("config", configName(*configPath)),
		zap.Strings("upstreams", upstreams), zap.Int("routes", len(cfg.Routes)))
	if len(cfg.Keys) == 0 {
		log.Warn("no client keys configured: the gateway is open to anyone who can reach it")
	} else {
		log.Info("client keys configured", zap.Int("keys", len(cfg.Keys)))
	}
	if g.Simulated() {
		log.Warn("every upstream is the built-in simulator: no real provider is reached (no config file given? pass --config or set TOOLGATE_CONFIG); responses say X-Toolgate-Upstream: sim")
	}
	// Signals are handled before the gateway says it is listening: a
	// SIGHUP sent as soon as it does reloads, rather than ending, it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fmt.Fprintf(stdout, "toolgate listening on %s (admin %s)\n", mainLn.Addr(), adminLn.Addr())
	var serveErr error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case serveErr = <-errc:
			break wait
		case <-hup:
			cfg = reload(*configPath, getenv, cfg, live, startSims, proc)
		}
	}
	ready.Store(false)
	log.Info("draining", zap.Duration("drain_timeout", cfg.Server.DrainTimeout))
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		log.Warn("drain timeout passed; closing the remaining connections", zap.Error(err))
		srv.Close()
	}
	admin.Close()
	log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// liveHandler serves with the current gateway; a reload swaps it.
type liveHandler struct {
	p       atomic.Pointer[gateway.Gateway]
	mu      sync.Mutex
	retired []retiredGateway
}

type retiredGateway struct {
	g *gateway.Gateway
	t *time.Timer
}

// retire closes a replaced gateway after d.
func (l *liveHandler) retire(g *gateway.Gateway, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retired = append(l.retired, retiredGateway{g, time.AfterFunc(d, g.Close)})
}

// closeAll closes the current gateway and every retired one whose timer
// has not fired yet.
func (l *liveHandler) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.retired {
		if r.t.Stop() {
			r.g.Close()
		}
	}
	l.current().Close()
}

func (l *liveHandler) set(g *gateway.Gateway)    { l.p.Store(g) }
func (l *liveHandler) current() *gateway.Gateway { return l.p.Load() }
func (l *liveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.current().ServeHTTP(w, r)
}

// reload loads the config file again and, if it is valid, swaps in a
// gateway built from it; the counters and remembered reasoning carry over
// when the state block did not change. An invalid config is refused with
// its reason logged, and the running one stays. Listener addresses, the
// log settings and server.* (timeouts, pprof) need a restart.
func reload(path string, getenv func(string) string, running *config.Config, live *liveHandler,
	startSims func(*config.Config) error, proc process) *config.Config {
	log := proc.log
	cfg, err := config.Load(path, getenv)
	if err == nil {
		if cfg.Server.MemoryLimit == 0 {
			cfg.FitMemory(running.Server.MemoryLimit) // the container's, read at start
		}
		err = startSims(cfg)
	}
	if err != nil {
		log.Error("config reload refused; the running config stays", zap.String("config", configName(path)), zap.Error(err))
		return running
	}
	if cfg.Server != running.Server || cfg.Log.Level != running.Log.Level || cfg.Telemetry != running.Telemetry {
		log.Warn("listen, admin_listen, server, log and telemetry settings change only on restart")
	}
	// The server keeps the settings it started with.
	cfg.Listen, cfg.AdminListen, cfg.Server, cfg.Log, cfg.Telemetry = running.Listen, running.AdminListen, running.Server, running.Log, running.Telemetry
	old := live.current()
	opts := proc.options(cfg)
	sameState := cfg.State == running.State
	var state gateway.State
	if sameState {
		state = old.HandOverState()
		opts.Counters, opts.Store, opts.CloseState = state.Counters, state.Reasoning, state.Close
		if cfg.Responses == running.Responses {
			opts.Responses = state.Responses
		}
	}
	g, err := gateway.New(opts)
	if err != nil {
		log.Error("config reload refused; the running config stays", zap.String("config", configName(path)), zap.Error(err))
		if sameState {
			old.TakeBackState(state)
		}
		return running
	}
	live.set(g)
	// Requests in flight finish on the old gateway; its idle connections
	// are closed once they have had time to (or when the process stops).
	live.retire(old, running.Server.DrainTimeout)
	log.Info("config reloaded", zap.String("config", configName(path)), zap.Int("routes", len(cfg.Routes)), zap.Int("keys", len(cfg.Keys)))
	return cfg
}

// process is what outlives reloads: the log, the metrics, the server's
// pending-request guard and the tracer.
type process struct {
	log     *zap.Logger
	metrics *observe.Metrics
	pending *gateway.Pending
	tracer  *telemetry.Provider
}

func (p process) options(cfg *config.Config) gateway.Options {
	o := gateway.Options{Config: cfg, Logger: p.log, Metrics: p.metrics, Pending: p.pending}
	if p.tracer.Enabled {
		o.Tracer = p.tracer
	}
	return o
}

func configName(path string) string {
	if path == "" {
		return "embedded default"
	}
	return path
}

// redisLog writes go-redis's log lines through zap.
type redisLog struct{ log *zap.Logger }

func (r redisLog) Printf(_ context.Context, format string, args ...any) {
	r.log.Warn(fmt.Sprintf(format, args...))
}
