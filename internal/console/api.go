package console

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/toolgate/toolgate/internal/wire"
)

// Source is what the console asks the live gateway: its upstreams, routes
// and keys as resolved, and the keys' use of their limits now.
type Source interface {
	ConsoleStatus(ctx context.Context) Status
}

// Status is the gateway's configuration as resolved, and its state now.
type Status struct {
	Upstreams []Upstream `json:"upstreams"`
	Routes    []Route    `json:"routes"`
	Keys      []Key      `json:"keys"`
}

// Upstream is one upstream (a deployment of the routes naming it).
type Upstream struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	// Host is the host of its URL (never its credentials or query).
	Host string `json:"host"`
	Auth string `json:"auth"`
	// CoolingUntil is when its cooldown ends (nil: healthy).
	CoolingUntil *time.Time `json:"cooling_until,omitempty"`
	InFlight     int        `json:"in_flight"`
	// The console's own, from the requests it kept: the last failure
	// and the median time of a call.
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	LatencyMs   float64    `json:"latency_ms"`
}

// Route is one route as resolved, defaults filled in.
type Route struct {
	Name          string       `json:"name"`
	Model         string       `json:"model"`
	UpstreamModel string       `json:"upstream_model,omitempty"`
	Deployments   []Deployment `json:"deployments"`
	Fallbacks     []string     `json:"fallbacks,omitempty"`
	Repair        string       `json:"repair"`
	Policy        string       `json:"policy"`
	ToolCalls     string       `json:"tool_calls"`
	Arguments     string       `json:"validate_arguments"`
	Reasoning     string       `json:"reasoning"`
	Retries       int          `json:"retries"`
	Cooldown      string       `json:"cooldown"`
}

// Deployment is one of a route's upstreams and its weight.
type Deployment struct {
	Upstream string `json:"upstream"`
	Weight   int    `json:"weight"`
}

// Key is a client key by its name (never the key or its hash), the models
// it may use, and its limits with what is used of them now.
type Key struct {
	Name   string   `json:"name"`
	Models []string `json:"models,omitempty"`
	Limits []Limit  `json:"limits,omitempty"`
}

// Limit is one of a key's limits: requests_per_minute, tokens_per_minute
// or max_cost_usd (in dollars), what is used of it in the current window,
// and when that ends.
type Limit struct {
	Name         string  `json:"name"`
	Max          float64 `json:"max"`
	Used         float64 `json:"used"`
	ResetSeconds int     `json:"reset_seconds"`
}

// Handler serves the console below /ui/: the page, its assets and the
// JSON API, asking source for the live gateway and reading totals from
// gather (the gateway's Prometheus registry).
func (c *Console) Handler(source func() Source, gather prometheus.Gatherer) http.Handler {
	r := chi.NewRouter()
	r.Use(secure)
	r.Get("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently).ServeHTTP)
	r.Get("/ui/", page("index.html"))
	r.Get("/ui/console.js", page("console.js"))
	r.Get("/ui/console.css", page("console.css"))
	r.Get("/ui/favicon.svg", page("favicon.svg"))
	r.Get("/ui/quirks", quirksPage)
	r.Group(func(r chi.Router) {
		r.Use(c.authorized)
		r.Get("/ui/api/overview", func(w http.ResponseWriter, req *http.Request) { writeJSON(w, c.overview(gather)) })
		r.Get("/ui/api/status", func(w http.ResponseWriter, req *http.Request) { writeJSON(w, c.status(req.Context(), source())) })
		r.Get("/ui/api/fixed", func(w http.ResponseWriter, req *http.Request) { writeJSON(w, fixed(gather)) })
		r.Get("/ui/api/requests", func(w http.ResponseWriter, req *http.Request) { writeJSON(w, c.recent()) })
		r.Get("/ui/api/requests/{id}", c.request)
		r.Get("/ui/api/events", c.server.ServeHTTP)
	})
	return r
}

// secure sets the console's headers: a strict Content-Security-Policy
// (its own scripts, styles and connections only; no inline script), no
// framing, no sniffing, no referrer (a token may be in the URL).
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// authorized asks the token, when the console has one: Authorization:
// Bearer, or ?token= (an EventSource sets no header).
func (c *Console) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.opts.Token != "" {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if q := r.URL.Query().Get("token"); q != "" {
				got = q
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(c.opts.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate console"`)
				http.Error(w, "the console's token is required (console.token): open the page with ?token=…", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// session admits a live-feed session (the token was checked), counts it
// while it lasts, and sends its headers.
func (c *Console) session(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	c.watchers.Add(1)
	context.AfterFunc(r.Context(), func() { c.watchers.Add(-1) })
	// The headers go at once: the page is live before the first event.
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	return nil, true
}

func (c *Console) request(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	for _, e := range c.recent() {
		if e.ID == id || e.RequestID == id {
			writeJSON(w, e)
			return
		}
	}
	http.Error(w, "no such request among those the console keeps", http.StatusNotFound)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Overview is the gateway at a glance.
type Overview struct {
	Version    string  `json:"version"`
	Config     Loaded  `json:"config"`
	UptimeSec  int64   `json:"uptime_seconds"`
	InFlight   int     `json:"requests_in_flight"`
	Streams    int     `json:"streams_in_flight"`
	PerSecond  float64 `json:"requests_per_second"`
	Errors     []Count `json:"errors_by_status"`
	OverheadMs struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"overhead_ms"`
	// Kept is how many requests the console keeps, Dropped how many the
	// live feed dropped for a watcher too slow.
	Kept    int   `json:"requests_kept"`
	Dropped int64 `json:"feed_dropped"`
}

func (c *Console) overview(gather prometheus.Gatherer) Overview {
	now := time.Now()
	c.mu.Lock()
	o := Overview{Version: c.opts.Version, Config: c.loaded, UptimeSec: int64(now.Sub(c.started).Seconds()), Kept: c.opts.Recent}
	c.mu.Unlock()
	o.PerSecond, o.Dropped = c.rate(now), c.dropped.Load()
	families := gathered(gather)
	o.InFlight = int(sum(families["toolgate_upstream_in_flight"]))
	o.Streams = int(sum(families["toolgate_streams_in_flight"]))
	o.Errors = []Count{}
	for code, n := range byLabel(families["toolgate_requests_total"], "code") {
		if code >= "400" {
			o.Errors = append(o.Errors, Count{code, int(n)})
		}
	}
	slices.SortFunc(o.Errors, func(a, b Count) int { return cmp.Compare(a.Name, b.Name) })
	var overhead []float64
	for _, e := range c.recent() {
		overhead = append(overhead, e.OverheadMs)
	}
	slices.Sort(overhead)
	if n := len(overhead); n > 0 {
		o.OverheadMs.P50, o.OverheadMs.P99 = overhead[n/2], overhead[min(n-1, n*99/100)]
	}
	return o
}

// status is the source's status, with what the kept requests say of
// each upstream: its last failure and its median call time.
func (c *Console) status(ctx context.Context, src Source) Status {
	if src == nil {
		return Status{}
	}
	s := src.ConsoleStatus(ctx)
	recent := c.recent()
	for i := range s.Upstreams {
		u := &s.Upstreams[i]
		var times []float64
		for _, e := range recent {
			if e.Upstream != u.Name || len(e.Attempts) == 0 {
				continue
			}
			times = append(times, e.DurationMs-e.OverheadMs)
		}
		u.LastError, u.LastErrorAt = lastError(recent, u.Name)
		slices.Sort(times)
		if len(times) > 0 {
			u.LatencyMs = times[len(times)/2]
		}
	}
	return s
}

// lastError is the latest failed attempt on upstream among the kept
// requests (newest first): its outcome, and when its request ended.
func lastError(recent []Entry, upstream string) (string, *time.Time) {
	for _, e := range recent {
		for i := len(e.Attempts) - 1; i >= 0; i-- {
			if a := e.Attempts[i]; a.Upstream == upstream && a.Outcome != "ok" && a.Outcome != "reconnected" {
				at := e.Time
				return a.Outcome + " (" + e.Method + " " + e.Path + ")", &at
			}
		}
	}
	return "", nil
}

// Fixed is what the gateway fixed since it started: repairs by action,
// normalizations by kind (with their quirk), reasoning restored, missed
// or sent with a placeholder, answers the completion policy refused, and
// tool calls whose arguments failed validation.
type Fixed struct {
	Repairs          []Count `json:"repairs"`
	Normalizations   []Fix   `json:"normalizations"`
	Reasoning        []Count `json:"reasoning"`
	Completions      []Count `json:"completions"`
	InvalidArguments int     `json:"invalid_arguments"`
}

func fixed(gather prometheus.Gatherer) Fixed {
	families := gathered(gather)
	f := Fixed{Normalizations: []Fix{}}
	f.Repairs = counts(byLabel(families["toolgate_repairs_total"], "action"))
	for _, k := range counts(byLabel(families["toolgate_normalizations_total"], "kind")) {
		f.Normalizations = append(f.Normalizations, Fix{Kind: k.Name, Quirk: wire.QuirkOf(k.Name), N: k.N})
	}
	f.Reasoning = counts(byLabel(families["toolgate_reasoning_restores_total"], "result"))
	f.Completions = counts(byLabel(families["toolgate_completions_total"], "outcome"))
	f.InvalidArguments = int(sum(families["toolgate_invalid_arguments_total"]))
	return f
}

// gathered are the registry's metric families by name.
func gathered(gather prometheus.Gatherer) map[string]*dto.MetricFamily {
	out := map[string]*dto.MetricFamily{}
	if gather == nil {
		return out
	}
	mfs, _ := gather.Gather()
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// byLabel sums a family's counters or gauges by one label's value.
func byLabel(mf *dto.MetricFamily, label string) map[string]float64 {
	out := map[string]float64{}
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += value(m)
			}
		}
	}
	return out
}

// sum is a family's total, over every series.
func sum(mf *dto.MetricFamily) float64 {
	n := 0.0
	if mf != nil {
		for _, m := range mf.GetMetric() {
			n += value(m)
		}
	}
	return n
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// counts are sums by name, in name order, none zero.
func counts(m map[string]float64) []Count {
	out := []Count{}
	for name, n := range m {
		if n > 0 {
			out = append(out, Count{name, int(n)})
		}
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
