// Package app is the toolgate process: its command line, its config, its
// two listeners, a reload on SIGHUP and the drain when it is told to stop.
// cmd/gateway is its main; cmd/demo runs it in process beside a scripted
// client.
//
//	toolgate [--config FILE] [--listen ADDR] [--admin-listen ADDR] [--log-flush-interval D]
//	toolgate check [--config FILE]
//
// The first serves the OpenAI-compatible API on the main listener and
// /metrics, /healthz, /readyz on the admin listener until its context
// ends, then drains, and reloads its config on SIGHUP. check loads a config as the gateway would, returns
// every problem with its field path, or says it is valid; it starts
// nothing.
package app

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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/heapfloor"
	"github.com/toolgate/toolgate/internal/maxprocs"
	"github.com/toolgate/toolgate/internal/memlimit"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
)

// World is what the process reads and writes outside itself.
type World struct {
	Getenv         func(string) string
	Stdout, Stderr io.Writer
}

// flags are the command line's settings.
type flags struct {
	command     string
	config      string
	listen      string
	adminListen string
	logFlush    time.Duration
}

func parse(args []string, w World) (flags, error) {
	fs := flag.NewFlagSet("toolgate", flag.ContinueOnError)
	fs.SetOutput(w.Stderr)
	var f flags
	fs.StringVar(&f.config, "config", w.Getenv("TOOLGATE_CONFIG"), "config file (default: $TOOLGATE_CONFIG, else the embedded default config)")
	fs.StringVar(&f.listen, "listen", "", "main listener address, overriding the config's listen")
	fs.StringVar(&f.adminListen, "admin-listen", "", "admin listener address, overriding the config's admin_listen")
	fs.DurationVar(&f.logFlush, "log-flush-interval", -1, "log.flush_interval override (0s: every line written at once)")
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		f.command, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case f.command == "demo":
		return f, errors.New("the demo is its own command: make demo (go run ./cmd/demo)")
	case f.command != "" && f.command != "check":
		return f, fmt.Errorf("unknown command %q (the command is check)", f.command)
	}
	return f, nil
}

// Run is the whole program with its world passed in. It serves until ctx
// ends, then drains in-flight requests for up to server.drain_timeout.
// Once both listeners are bound it prints one line to w.Stdout:
//
//	toolgate listening on <main address> (admin <admin address>)
func Run(ctx context.Context, args []string, w World) error {
	f, err := parse(args, w)
	if err != nil {
		return err
	}
	if f.command == "check" {
		return check(f.config, w)
	}
	cfg, err := config.Load(f.config, w.Getenv)
	if err != nil {
		return err
	}
	if f.listen != "" {
		cfg.Listen = f.listen
	}
	if f.adminListen != "" {
		cfg.AdminListen = f.adminListen
	}
	if f.logFlush >= 0 {
		cfg.Log.FlushInterval = &f.logFlush
	}
	log, stopLog, err := observe.NewLogger(w.Stderr, cfg.Log.Level.Value, *cfg.Log.FlushInterval)
	if err != nil {
		return err
	}
	defer stopLog()
	fitMemory(cfg, w.Getenv, log)
	// The collector's goal stays at 8 MB at the least, unless GOGC is set.
	defer heapfloor.FromEnv(w.Getenv, heapfloor.Default)()
	// One P while lightly loaded, the runtime's default once busy, unless
	// GOMAXPROCS is set.
	defer maxprocs.FromEnv(w.Getenv, maxprocs.Default)()

	reg := prometheus.NewRegistry()
	tp, err := telemetry.New(ctx, telemetry.Options{Endpoint: cfg.Telemetry.OTLPEndpoint, Protocol: cfg.Telemetry.Protocol.Value}, w.Getenv)
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
	p := &process{path: f.config, getenv: w.Getenv, log: log, tracer: tp,
		metrics: observe.NewMetrics(reg, observe.MetricsOptions{HideKeyNames: !*cfg.Metrics.KeyLabels})}
	defer p.sims.close()
	if cfg.Console.On() {
		p.console = console.New(console.Options{Recent: cfg.Console.Kept(), Token: cfg.Console.Token, Version: buildVersion()})
		defer p.console.Close()
		p.console.SetLoaded(configName(f.config), nil)
	}
	return p.serve(ctx, cfg, reg, w)
}

// check loads the config at path (the embedded default when empty) and
// reports whether it is valid: every problem, with its field path, is in
// the error.
func check(path string, w World) error {
	cfg, err := config.Load(path, w.Getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(w.Stdout, "%s: valid (%d upstreams, %d routes, %d client keys)\n", configName(path), len(cfg.Upstreams), len(cfg.Routes), len(cfg.Keys))
	for _, u := range cfg.Upstreams {
		switch {
		case u.Auth.Value != upstream.AuthKey:
			fmt.Fprintf(w.Stdout, "note: upstream %s authenticates with %s credentials, looked for at its first request (%s); without them its requests fail (502)\n", u.Name, u.Auth.Name, cloudCredentials[u.Auth.Value])
		case !u.Simulator && u.APIKey == "":
			fmt.Fprintf(w.Stdout, "note: upstream %s has no api_key: its provider will refuse the requests routed to it (502 upstream_auth_failed), unless it needs none\n", u.Name)
		}
	}
	if c := cfg.Console; c.On() && c.Token == "" && !loopback(cfg.AdminListen) {
		fmt.Fprintf(w.Stdout, "note: the console (/ui/ on admin_listen %s) has no console.token and the admin listener is not loopback-only: whoever reaches it sees the routes, key names and recent requests' outlines\n", cfg.AdminListen)
	}
	if cfg.Responses.SealKey == "" && slices.ContainsFunc(cfg.Upstreams, func(u config.Upstream) bool { return u.Protocol.Value == translate.Responses }) {
		fmt.Fprintln(w.Stdout, "note: responses.seal_key is not set: each process seals the encrypted reasoning it hands Responses clients with a secret made at start, so an item another replica handed out, or this one before a restart, goes back without its reasoning")
	}
	return nil
}

// loopback reports an address that listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// cloudCredentials say where each cloud's credentials are looked for.
var cloudCredentials = map[upstream.Auth]string{
	upstream.AuthGoogle: "Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, workload identity, the metadata server",
	upstream.AuthAzure:  "AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE with AZURE_TENANT_ID and AZURE_CLIENT_ID, else a managed identity",
	upstream.AuthAWS:    "the AWS default chain: AWS_ACCESS_KEY_ID, the shared config, SSO, IRSA, Pod Identity, ECS, EC2",
}

// fitMemory sets the memory the gateway may use: server.memory_limit,
// else the container's. The runtime's soft memory limit is 90% of it,
// unless GOMEMLIMIT is set, and the in-memory stores' default bounds
// shares of it.
func fitMemory(cfg *config.Config, getenv func(string) string, log *zap.Logger) {
	if cfg.Server.MemoryLimit == 0 {
		if limit, ok := memlimit.Limit(memlimit.Root); ok {
			cfg.FitMemory(limit)
		}
	}
	if soft := memlimit.Apply(getenv, cfg.Server.MemoryLimit); soft > 0 {
		log.Info("memory limit", zap.Int64("memory_limit_bytes", cfg.Server.MemoryLimit), zap.Int64("gomemlimit_bytes", soft),
			zap.Int64("responses_max_bytes", cfg.Responses.MaxBytes), zap.Int64("reasoning_max_bytes", cfg.ReasoningMaxBytes()))
	}
}

// serve binds both listeners, serves until ctx ends or a server fails,
// reloading the config on each hangup, then drains.
func (p *process) serve(ctx context.Context, cfg *config.Config, reg *prometheus.Registry, w World) error {
	if err := p.sims.start(cfg); err != nil {
		return err
	}
	// The pending-request guard belongs to the server: it outlives reloads.
	p.pending = gateway.NewPending(cfg.Server, p.metrics)
	g, err := gateway.New(p.options(cfg))
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	// The live gateway is swapped on a reload; a request keeps the one it
	// started with until it ends.
	p.live.set(g)
	defer p.live.closeAll()

	mainLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	adminLn, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		mainLn.Close()
		return fmt.Errorf("admin_listen: %w", err)
	}
	errLog, _ := zap.NewStdLogAt(p.log.Named("http"), zap.WarnLevel)
	srv := gateway.NewServer(cfg.Server, &p.live, p.pending, errLog)
	var ready atomic.Bool
	admin := &http.Server{
		Handler:           gateway.NewAdmin(reg, ready.Load, cfg.Server.Pprof, p.ui(reg)),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          errLog,
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(mainLn) }()
	go func() { errc <- admin.Serve(adminLn) }()
	ready.Store(true)
	p.started(cfg, g, mainLn.Addr(), adminLn.Addr())
	// Signals are handled before the gateway says it is listening: a
	// SIGHUP sent as soon as it does reloads, rather than ending, it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fmt.Fprintf(w.Stdout, "toolgate listening on %s (admin %s)\n", mainLn.Addr(), adminLn.Addr())
	var serveErr error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case serveErr = <-errc:
			break wait
		case <-hup:
			cfg = p.reload(cfg)
		}
	}
	ready.Store(false)
	p.drain(srv, cfg.Server.DrainTimeout)
	admin.Close()
	p.log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// started logs what the process serves and what a reader should know
// about it.
func (p *process) started(cfg *config.Config, g *gateway.Gateway, mainAddr, adminAddr net.Addr) {
	upstreams := make([]string, 0, len(cfg.Upstreams))
	for _, u := range cfg.Upstreams {
		upstreams = append(upstreams, u.Name)
	}
	p.log.Info("toolgate started", zap.String("listen", mainAddr.String()),
		zap.String("admin_listen", adminAddr.String()), zap.String("config", configName(p.path)),
		zap.Strings("upstreams", upstreams), zap.Int("routes", len(cfg.Routes)))
	if len(cfg.Keys) == 0 {
		p.log.Warn("no client keys configured: the gateway is open to anyone who can reach it")
	} else {
		p.log.Info("client keys configured", zap.Int("keys", len(cfg.Keys)))
	}
	if g.Simulated() {
		p.log.Warn("every upstream is the built-in simulator: no real provider is reached (no config file given? pass --config or set TOOLGATE_CONFIG); responses say X-Toolgate-Upstream: sim")
	}
}

// drain lets in-flight requests finish for up to d, then closes what is
// left.
func (p *process) drain(srv *http.Server, d time.Duration) {
	p.log.Info("draining", zap.Duration("drain_timeout", d))
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		p.log.Warn("drain timeout passed; closing the remaining connections", zap.Error(err))
		srv.Close()
	}
}

func configName(path string) string {
	if path == "" {
		return "embedded default"
	}
	return path
}
