package app

import (
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/internal/translate"
)

// process is what outlives reloads: the config's path, the log, the
// metrics, the server's pending-request guard, the tracer, the live
// gateway and the built-in simulators.
type process struct {
	path    string
	getenv  func(string) string
	log     *zap.Logger
	metrics *observe.Metrics
	pending *gateway.Pending
	tracer  *telemetry.Provider
	live    liveHandler
	sims    simulators
	// console is the live console (nil: console.enabled is false); it
	// outlives reloads, as its ring of recent requests does.
	console *console.Console
}

func (p *process) options(cfg *config.Config) gateway.Options {
	o := gateway.Options{Config: cfg, Logger: p.log, Metrics: p.metrics, Pending: p.pending, Console: p.console}
	if p.tracer.Enabled {
		o.Tracer = p.tracer
	}
	return o
}

// reload loads the config file again and, if it is valid, swaps in a
// gateway built from it; the counters and remembered reasoning carry over
// when the state block did not change. An invalid config is refused with
// its reason logged, and the running one stays. Listener addresses, the
// log settings and server.* (timeouts, pprof) need a restart.
func (p *process) reload(running *config.Config) *config.Config {
	cfg, err := config.Load(p.path, p.getenv)
	if err == nil {
		if cfg.Server.MemoryLimit == 0 {
			cfg.FitMemory(running.Server.MemoryLimit) // the container's, read at start
		}
		err = p.sims.start(cfg)
	}
	if err != nil {
		p.log.Error("config reload refused; the running config stays", zap.String("config", configName(p.path)), zap.Error(err))
		p.console.SetLoaded("", err)
		return running
	}
	if cfg.Server != running.Server || cfg.Log.Level != running.Log.Level || cfg.Telemetry != running.Telemetry || !sameConsole(cfg.Console, running.Console) {
		p.log.Warn("listen, admin_listen, server, log, telemetry and console settings change only on restart")
	}
	// The server keeps the settings it started with.
	cfg.Listen, cfg.AdminListen, cfg.Server, cfg.Log, cfg.Telemetry = running.Listen, running.AdminListen, running.Server, running.Log, running.Telemetry
	cfg.Console = running.Console
	old := p.live.current()
	opts := p.options(cfg)
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
		p.log.Error("config reload refused; the running config stays", zap.String("config", configName(p.path)), zap.Error(err))
		p.console.SetLoaded("", err)
		if sameState {
			old.TakeBackState(state)
		}
		return running
	}
	p.live.set(g)
	p.console.SetLoaded(configName(p.path), nil)
	// Requests in flight finish on the old gateway; its idle connections
	// are closed once they have had time to (or when the process stops).
	p.live.retire(old, running.Server.DrainTimeout)
	p.log.Info("config reloaded", zap.String("config", configName(p.path)), zap.Int("routes", len(cfg.Routes)), zap.Int("keys", len(cfg.Keys)))
	return cfg
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

// simulators are the built-in simulators a config's upstreams name: each
// runs on a loopback port for the process's lifetime.
type simulators struct{ servers []*http.Server }

// start runs a simulator for each upstream of cfg that is one and points
// the upstream at it.
func (s *simulators) start(cfg *config.Config) error {
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if !u.Simulator {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("start simulator %s: %w", u.Name, err)
		}
		srv := &http.Server{Handler: sim.New(sim.Options{}), ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go srv.Serve(ln)
		u.URL = "http://" + ln.Addr().String() + "/v1"
		switch u.Protocol.Value {
		case translate.Gemini:
			u.URL += "beta" // the Gemini API's version
		case translate.Bedrock:
			u.URL = strings.TrimSuffix(u.URL, "/v1") // the runtime's endpoint names no version
		}
	}
	return nil
}

func (s *simulators) close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

// sameConsole reports console settings that did not change.
func sameConsole(a, b config.Console) bool {
	return a.On() == b.On() && a.Kept() == b.Kept() && a.Token == b.Token
}

// ui is the console's handler on the admin listener (nil: none), asking
// the live gateway.
func (p *process) ui(reg prometheus.Gatherer) http.Handler {
	if p.console == nil {
		return nil
	}
	return p.console.Handler(func() console.Source {
		if g := p.live.current(); g != nil {
			return g
		}
		return nil
	}, reg)
}

// buildVersion is the binary's version: its module's, and the commit it
// was built from when the build recorded one.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
