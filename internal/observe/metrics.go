package observe

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds toolgate's Prometheus collectors. It is safe for concurrent use.
type Metrics struct {
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	upstreamDuration *prometheus.HistogramVec
	ttft             *prometheus.HistogramVec
	streamsInFlight  *prometheus.GaugeVec
	upstreamErrors   *prometheus.CounterVec
	clientGone       *prometheus.CounterVec
	repairs          *prometheus.CounterVec
	normalizations   *prometheus.CounterVec
	completions      *prometheus.CounterVec
	invalidArguments *prometheus.CounterVec
	reasoning        *prometheus.CounterVec
	restores         *prometheus.CounterVec
	rejections       *prometheus.CounterVec
	tokens           *prometheus.CounterVec
	cost             *prometheus.CounterVec
	upInFlight       *prometheus.GaugeVec
	cooldowns        *prometheus.CounterVec
	keyInFlight      *prometheus.GaugeVec
	stateErrors      *prometheus.CounterVec
	attempts         *prometheus.CounterVec
	pending          prometheus.Gauge
	pendingRefused   *prometheus.CounterVec
	panics           prometheus.Counter
	// own are the collectors above, toolgate's own metrics.
	own []prometheus.Collector
	// hideKeys labels keys by a pseudonym instead of their name
	// (metrics.key_labels: false).
	hideKeys bool
}

// Names returns the names of toolgate's own metric families, whether or
// not they have a series yet (a counter vector has none until first
// counted): what a test may ask the value of.
func (m *Metrics) Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range m.own {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		// Desc has no accessor for its name; its String holds it quoted.
		if _, rest, ok := strings.Cut(d.String(), `fqName: "`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			names = append(names, name)
		}
	}
	return names
}

// MetricsOptions adjust NewMetrics.
type MetricsOptions struct {
	// HideKeyNames labels the per-key metrics with a pseudonym of each
	// key's name ("key-" and 8 hex digits of its SHA-256) instead of the
	// name: /metrics then does not list the keys' names beside their
	// spend.
	HideKeyNames bool
}

// latencyBuckets span a fast local proxy hop to a long model answer.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// NewMetrics creates the collectors and registers them, with the Go runtime
// and process collectors, on reg.
func NewMetrics(reg prometheus.Registerer, opts ...MetricsOptions) *Metrics {
	m := &Metrics{}
	m.requests = m.counter("toolgate_requests_total",
		"Requests handled, by route and HTTP status code (499: the client went away first).", "route", "code")
	m.duration = m.histogram("toolgate_request_duration_seconds",
		"Time from a request's arrival to the end of its response, by route and whether it streamed.", "route", "stream")
	m.upstreamDuration = m.histogram("toolgate_upstream_duration_seconds",
		"Time spent on the upstream call, from sending the request to the end of its body, by upstream.", "upstream")
	m.ttft = m.histogram("toolgate_time_to_first_token_seconds",
		"Time from a streamed request's arrival to the first event sent to the client, by route.", "route")
	m.streamsInFlight = m.gauge("toolgate_streams_in_flight",
		"Streamed requests currently being served, by route.", "route")
	m.upstreamErrors = m.counter("toolgate_upstream_errors_total",
		"Failed upstream calls, by upstream and kind (connect, timeout, status, stream, protocol).", "upstream", "kind")
	m.clientGone = m.counter("toolgate_client_disconnects_total",
		"Requests whose client went away before the response ended, by route.", "route")
	m.repairs = m.counter("toolgate_repairs_total",
		"Transcript repairs, by route and action (sealed, dropped, moved, and request normalizations).", "route", "action")
	m.normalizations = m.counter("toolgate_normalizations_total",
		"Response normalizations applied to an upstream's tool-call stream, by upstream and kind.", "upstream", "kind")
	m.completions = m.counter("toolgate_completions_total",
		"Responses judged by the completion policy, by route and outcome (ok, incomplete, violation).", "route", "outcome")
	m.invalidArguments = m.counter("toolgate_invalid_arguments_total",
		"Tool calls whose arguments failed validation against the tool's schema in annotate mode, by route.", "route")
	m.reasoning = m.counter("toolgate_reasoning_requests_total",
		"Requests sent with a reasoning level, by route and level (off, low, medium, high).", "route", "level")
	m.restores = m.counter("toolgate_reasoning_restores_total",
		"Assistant turns whose reasoning was put back into a request (restored), was missing from the store (miss), or was sent with the upstream's documented placeholder (placeholder: Gemini's skip_thought_signature_validator), by route.", "route", "result")
	m.rejections = m.counter("toolgate_budget_rejections_total",
		"Requests refused or cut by a budget or rate limit, by route, client key and reason (maxInputChars, maxCalls, callTimeoutMs, maxOutputChars, requests_per_minute, tokens_per_minute, max_cost_usd, state_unavailable).", "route", "key", "reason")
	m.tokens = m.counter("toolgate_tokens_total",
		"Tokens the upstreams reported in usage, by client key and direction (input: prompt_tokens, output: completion_tokens).", "key", "direction")
	m.cost = m.counter("toolgate_cost_usd_total",
		"What the upstreams' reported usage cost in dollars by the configured pricing, by client key, route and priced model (the pricing entry's name).", "key", "route", "model")
	m.upInFlight = m.gauge("toolgate_upstream_in_flight",
		"Upstream calls in progress, by upstream (a route's deployment).", "upstream")
	m.cooldowns = m.counter("toolgate_deployment_cooldowns_total",
		"Deployments put in cooldown by an attempt, by route, upstream and reason (rate_limited, status_5xx, unreachable).", "route", "upstream", "reason")
	m.keyInFlight = m.gauge("toolgate_key_requests_in_flight",
		"Chat requests being served, by client key.", "key")
	m.stateErrors = m.counter("toolgate_state_errors_total",
		"Operations on the shared state store (Redis) that failed, by operation (admit, add_tokens, reasoning_get, reasoning_put) and what the request did (fail_open, fail_closed).", "operation", "mode")
	m.attempts = m.counter("toolgate_upstream_attempts_total",
		"Upstream attempts by route, upstream and outcome (ok, connect, timeout, status_429, status_5xx, status_4xx, incomplete, violation, canceled; reconnected: resent once on a fresh connection).", "route", "upstream", "outcome")
	m.pending = m.gauge1("toolgate_pending_requests",
		"Connections that have not finished sending their request (headers and body).")
	m.pendingRefused = m.counter("toolgate_pending_refused_total",
		"Connections or requests refused because too many were still sending their request, by the cap reached (global: server.max_pending_requests, ip: server.max_pending_per_ip, keyless: closed to make room in server.max_pending_keyless).", "scope")
	m.panics = m.counter1("toolgate_panics_total",
		"Requests whose handling panicked (answered 500 when nothing was sent yet); always 0 in a sound gateway.")
	reg.MustRegister(m.own...)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(opts) > 0 {
		m.hideKeys = opts[0].HideKeyNames
	}
	return m
}

// counter, histogram and gauge create one of toolgate's own families (the
// ones Names lists), counter1 and gauge1 one without labels.
func (m *Metrics) counter(name, help string, labels ...string) *prometheus.CounterVec {
	return own(m, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

func (m *Metrics) histogram(name, help string, labels ...string) *prometheus.HistogramVec {
	return own(m, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels))
}

func (m *Metrics) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return own(m, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
}

func (m *Metrics) counter1(name, help string) prometheus.Counter {
	return own(m, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

func (m *Metrics) gauge1(name, help string) prometheus.Gauge {
	return own(m, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

func own[C prometheus.Collector](m *Metrics, c C) C {
	m.own = append(m.own, c)
	return c
}

func routeLabel(route string) string {
	if route == "" {
		return "none"
	}
	return route
}

// KeyLabel is the key label of a request without a client key.
const KeyLabel = "none"

// keyLabel is the key label of a request of key.
func (m *Metrics) keyLabel(key string) string {
	switch {
	case key == "":
		return KeyLabel
	case m.hideKeys:
		return KeyPseudonym(key)
	}
	return key
}

// KeyPseudonym is the label of a key's metrics when key names are hidden.
func KeyPseudonym(name string) string {
	h := sha256.Sum256([]byte(name))
	return "key-" + hex.EncodeToString(h[:4])
}

// KeyStarted counts a request in flight for key; call the returned
// function when it ends. (In-flight gauges move while requests run: they
// are the only request metrics not derived from the finished Record.)
func (m *Metrics) KeyStarted(key string) (done func()) {
	g := m.keyInFlight.WithLabelValues(m.keyLabel(key))
	g.Inc()
	return g.Dec
}

// UpstreamInFlight is the gauge of an upstream's calls in flight,
// resolved once per upstream (Inc when a call starts, Dec when it ends).
func (m *Metrics) UpstreamInFlight(upstream string) prometheus.Gauge {
	return m.upInFlight.WithLabelValues(upstream)
}

// StreamStarted counts a stream in flight on route; call the returned
// function when it ends.
func (m *Metrics) StreamStarted(route string) (done func()) {
	g := m.streamsInFlight.WithLabelValues(routeLabel(route))
	g.Inc()
	return g.Dec
}

// PendingRequests sets how many connections are still sending their
// request.
func (m *Metrics) PendingRequests(n int) { m.pending.Set(float64(n)) }

// PendingRefused counts one connection or request refused by a pending
// cap (scope global or ip).
func (m *Metrics) PendingRefused(scope string) { m.pendingRefused.WithLabelValues(scope).Inc() }

// Observe updates every metric a finished request moves, from its record.
func (m *Metrics) Observe(r *Record) {
	route := routeLabel(r.Route)
	m.requests.WithLabelValues(route, strconv.Itoa(r.Status)).Inc()
	if r.Panicked {
		m.panics.Inc()
	}
	m.duration.WithLabelValues(route, strconv.FormatBool(r.Stream)).Observe(r.Duration.Seconds())
	if r.Upstream != "" && r.UpstreamDuration > 0 {
		m.upstreamDuration.WithLabelValues(r.Upstream).Observe(r.UpstreamDuration.Seconds())
	}
	if r.Stream && r.TTFB > 0 {
		m.ttft.WithLabelValues(route).Observe(r.TTFB.Seconds())
	}
	if r.Upstream != "" && r.ErrorKind != "" {
		m.upstreamErrors.WithLabelValues(r.Upstream, r.ErrorKind).Inc()
	}
	if r.ClientGone {
		m.clientGone.WithLabelValues(route).Inc()
	}
	for _, c := range r.Repairs {
		if c.N > 0 {
			m.repairs.WithLabelValues(route, c.Name).Add(float64(c.N))
		}
	}
	for _, a := range r.Attempts {
		m.attempts.WithLabelValues(routeLabel(a.Route), a.Upstream, string(a.Outcome)).Inc()
		if a.Cooldown != "" {
			m.cooldowns.WithLabelValues(routeLabel(a.Route), a.Upstream, a.Cooldown).Inc()
		}
		if a.Verdict != "" {
			m.completions.WithLabelValues(routeLabel(a.Route), a.Verdict).Inc()
		}
		for _, f := range a.Fixes {
			if f.N > 0 {
				m.normalizations.WithLabelValues(a.Upstream, f.Name).Add(float64(f.N))
			}
		}
	}
	if r.InvalidArguments > 0 {
		m.invalidArguments.WithLabelValues(route).Add(float64(r.InvalidArguments))
	}
	if r.Reasoning != "" {
		m.reasoning.WithLabelValues(route, r.Reasoning).Inc()
	}
	if r.ReasoningRestored > 0 {
		m.restores.WithLabelValues(route, "restored").Add(float64(r.ReasoningRestored))
	}
	if r.ReasoningPlaceholder > 0 {
		m.restores.WithLabelValues(route, "placeholder").Add(float64(r.ReasoningPlaceholder))
	}
	if r.ReasoningMiss > 0 {
		m.restores.WithLabelValues(route, "miss").Add(float64(r.ReasoningMiss))
	}
	if r.Limited != "" {
		m.rejections.WithLabelValues(route, m.keyLabel(r.Key), r.Limited).Inc()
	}
	if r.PromptTokens > 0 {
		m.tokens.WithLabelValues(m.keyLabel(r.Key), "input").Add(float64(r.PromptTokens))
	}
	if r.CostModel != "" {
		m.cost.WithLabelValues(m.keyLabel(r.Key), route, r.CostModel).Add(r.CostUSD)
	}
	if r.CompletionTokens > 0 {
		m.tokens.WithLabelValues(m.keyLabel(r.Key), "output").Add(float64(r.CompletionTokens))
	}
	for _, op := range r.StateErrors {
		m.stateErrors.WithLabelValues(op, r.StateMode).Inc()
	}
}
