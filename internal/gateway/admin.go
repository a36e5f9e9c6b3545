package gateway

import (
	"context"
	"net/http"
	"net/http/pprof"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/policy"
)

// NewAdmin returns the admin listener's handler: /metrics from g, /healthz
// (200 while the process is alive) and /readyz (200 while ready reports
// true: config loaded and the main listener serving, not draining). With
// withPprof, Go's profiles are under /debug/pprof/ (server.pprof). ui,
// when not nil, serves the console below /ui/.
func NewAdmin(g prometheus.Gatherer, ready func() bool, withPprof bool, ui http.Handler) http.Handler {
	r := chi.NewRouter()
	if ui != nil {
		r.Handle("/ui", ui)
		r.Handle("/ui/*", ui)
	}
	if withPprof {
		r.HandleFunc("/debug/pprof/*", pprof.Index)
		r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		r.HandleFunc("/debug/pprof/profile", pprof.Profile)
		r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	r.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return r
}

// ConsoleStatus is the gateway as the console shows it (console.Source):
// each upstream with its cooldown and calls in flight, each route as
// resolved, each key with what it used of its limits now — never a key,
// a hash, an upstream's key or its URL's credentials.
func (g *Gateway) ConsoleStatus(ctx context.Context) console.Status {
	var s console.Status
	until := map[string]int64{}
	for _, p := range g.plans {
		for _, d := range p.deployments {
			until[d.plan.upstream.name] = max(until[d.plan.upstream.name], d.health.until.Load())
		}
	}
	now := g.clock.now()
	for _, u := range g.cfg.Upstreams {
		cu := console.Upstream{Name: u.Name, Protocol: u.Protocol.Value.String(), Auth: u.Auth.Name}
		if pu, err := url.Parse(u.URL); err == nil {
			cu.Host = pu.Host
		}
		if u.Simulator {
			cu.Host = "built-in simulator"
		}
		if t := time.Unix(0, until[u.Name]); until[u.Name] > 0 && t.After(now) {
			cu.CoolingUntil = &t
		}
		cu.InFlight = gaugeValue(g.upstreamGauge(u.Name))
		s.Upstreams = append(s.Upstreams, cu)
	}
	for i := range g.cfg.Routes {
		s.Routes = append(s.Routes, g.consoleRoute(&g.cfg.Routes[i]))
	}
	// One bound for every key's counters: a store that does not answer
	// costs the console two seconds, not two per key.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, k := range g.keys.All() {
		s.Keys = append(s.Keys, g.consoleKey(ctx, k, now))
	}
	return s
}

// upstreamGauge is the in-flight gauge of the upstream named name.
func (g *Gateway) upstreamGauge(name string) prometheus.Gauge {
	for _, p := range g.plans {
		for _, d := range p.deployments {
			if d.plan.upstream.name == name {
				return d.plan.upstream.inFlight
			}
		}
	}
	return nil
}

// gaugeValue reads a gauge (0 for none).
func gaugeValue(gauge prometheus.Gauge) int {
	var m dto.Metric
	if gauge == nil || gauge.Write(&m) != nil {
		return 0
	}
	return int(m.GetGauge().GetValue())
}

// consoleRoute is a route as resolved, defaults filled in.
func (g *Gateway) consoleRoute(r *config.Route) console.Route {
	cr := console.Route{Name: r.Name, Model: r.Model, UpstreamModel: r.UpstreamModel, Fallbacks: r.Fallbacks, Repair: r.Repair.Name,
		Policy: r.Policy.Name, ToolCalls: r.ToolCalls.Name, Arguments: r.ValidateArguments.Name, Retries: r.Retries, Cooldown: r.Cooldown.String()}
	for _, d := range r.Upstreams {
		cr.Deployments = append(cr.Deployments, console.Deployment{Upstream: d.Name, Weight: *d.Weight})
	}
	cr.Reasoning = "off"
	if r.Reasoning.Format.Value != policy.FormatNone {
		cr.Reasoning = r.Reasoning.Format.Name + ", " + r.Reasoning.Level.Name
	}
	return cr
}

// consoleKey is a key by its name, with what it used of its limits in
// their current windows (read without counting anything).
func (g *Gateway) consoleKey(ctx context.Context, k auth.Key, now time.Time) console.Key {
	ck := console.Key{Name: k.Name, Models: k.Models}
	a := budget.Admission{Key: k.Name, MaxCalls: budget.Unlimited, RequestsPerMinute: k.RateLimit.RequestsPerMinute,
		TokensPerMinute: k.RateLimit.TokensPerMinute, Spend: g.keyPlans[k.Name].spend, Now: now, Check: true}
	if a.RequestsPerMinute <= 0 && a.TokensPerMinute <= 0 && a.Spend.Max <= 0 {
		return ck
	}
	admitted, _ := budget.Admit(ctx, g.counters, a)
	for _, r := range admitted.Rates() {
		l := console.Limit{Name: r.Limit.String(), Max: float64(r.Max), Used: float64(r.Used), ResetSeconds: int(r.Reset.Seconds())}
		if r.Limit == budget.MaxCost {
			l.Name, l.Max, l.Used = "max_cost_usd", budget.USD(r.Max), budget.USD(r.Used)
		}
		ck.Limits = append(ck.Limits, l)
	}
	return ck
}
