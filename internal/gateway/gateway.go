package gateway

import (
	crand "crypto/rand"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/state"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// Options are the gateway's dependencies.
type Options struct {
	// Config is the loaded configuration; simulator upstreams must have
	// their URL filled in by the caller before New.
	Config  *config.Config
	Logger  *zap.Logger
	Metrics *observe.Metrics
	// Store holds reasoning to restore, per client key, and Counters the
	// admission counters; nil means what the config's state block says
	// (memory, or Redis).
	Store    state.TenantStore
	Counters state.Store
	// Responses keeps the Responses API's stored responses; nil means
	// what the config's responses block says. A reload hands it over, so
	// that stored responses outlive it.
	Responses state.TenantStore
	// CloseState releases Store and Counters when the gateway closes
	// (given with them by HandOverState); nil releases nothing.
	CloseState func()
	// Pending is the server's guard on connections still sending their
	// request (see NewServer); nil means none.
	Pending *Pending
	// Now and Rand are the clock and the random source of retry backoff;
	// nil means time.Now and a random jitter.
	Now  func() time.Time
	Rand func() float64
	// Sleep waits d or until ctx ends, reporting whether it waited d; nil
	// means a timer.
	Sleep func(ctx context.Context, d time.Duration) bool
	// Tracer makes the request's spans (see internal/telemetry); nil
	// means none.
	Tracer trace.TracerProvider
	// Console keeps each request's record for the live console (it
	// outlives reloads); nil means none.
	Console *console.Console
}

// Gateway serves the main listener's API: POST /v1/chat/completions and
// GET /v1/models. It is an http.Handler, safe for concurrent use; every
// value it reads per request was resolved from the config when it was
// built (plans), so a reload builds a new Gateway.
type Gateway struct {
	cfg     *config.Config
	log     *zap.Logger
	metrics *observe.Metrics
	router  http.Handler
	plans   map[string]*plan // by route name
	// routeOf finds the plan of a client's model name, prices the price of
	// an upstream model name: both built at load.
	routeOf byModel[*plan]
	clients map[string]*upstream.Client
	keys    auth.Keys
	// keyPlans are the client keys' budgets, resolved, by key name.
	keyPlans  map[string]keyPlan
	models    modelLists
	prices    byModel[budget.Price]
	store     state.TenantStore
	counters  state.Store
	responses state.TenantStore // nil: responses are not stored
	pending   *Pending
	clock     clock
	tracer    trace.Tracer // nil: tracing is off
	// capture puts messages on spans (telemetry.capture_content).
	capture bool
	// failClosed: a request is refused when the state store is
	// unreachable (state.on_error: fail_closed).
	failClosed bool
	// simulated: every upstream is a built-in simulator.
	simulated bool
	close     func() // releases the state store
	// sealKey makes the tags of the encrypted reasoning handed to
	// Responses clients (responses.seal_key, or processSealKey).
	sealKey []byte
	// console keeps each request's record (nil: none), with the outline of
	// what repair did.
	console *console.Console
}

// clock is the time and randomness backoff uses.
type clock struct {
	now   func() time.Time
	rand  func() float64
	sleep func(ctx context.Context, d time.Duration) bool
}

// processSealKey is the seal key of a process whose config names none:
// made once, so that it survives a reload, not a restart.
var processSealKey = func() []byte {
	b := make([]byte, 32)
	_, _ = crand.Read(b)
	return b
}()

// sealer is the Sealer of key's requests.
func (g *Gateway) sealer(key *auth.Key) translate.Sealer {
	return responses.NewSealer(g.sealKey, tenant(key))
}

// New returns the gateway for opts. It fails only when the configured
// state store cannot be set up (a Redis that does not answer yet is not a
// failure: state.on_error applies).
func New(opts Options) (*Gateway, error) {
	g := &Gateway{
		cfg:      opts.Config,
		log:      opts.Logger,
		metrics:  opts.Metrics,
		clients:  map[string]*upstream.Client{},
		store:    opts.Store,
		counters: opts.Counters,
		pending:  opts.Pending,
		close:    func() {},
		clock:    newClock(opts),
		capture:  opts.Config.Telemetry.CaptureContent,
		console:  opts.Console,
	}
	if opts.Tracer != nil {
		g.tracer = opts.Tracer.Tracer("github.com/toolgate/toolgate")
	}
	if err := g.openState(opts); err != nil {
		return nil, err
	}
	for _, u := range g.cfg.Upstreams {
		g.clients[u.Name] = upstreamClient(u)
	}
	g.plans = plans(g.cfg, g.clients, policy.NewSchemas(0), g.metrics)
	g.routeOf, g.prices = routesOf(g.cfg, g.plans), pricesOf(g.cfg)
	g.simulated = true
	for _, u := range g.cfg.Upstreams {
		g.simulated = g.simulated && u.Simulator
	}
	g.failClosed = g.cfg.State.OnError.Value == state.FailClosed
	g.sealKey = processSealKey
	if k := g.cfg.Responses.SealKey; k != "" {
		g.sealKey = []byte(k)
	}
	g.keys = auth.New(g.cfg.Keys)
	g.keyPlans = map[string]keyPlan{}
	for _, k := range g.keys.All() {
		g.keyPlans[k.Name] = resolveKey(k.Budget)
	}
	g.models = newModelLists(g.cfg, g.keys)
	g.router = g.routes()
	return g, nil
}

// newClock is opts' clock, the real one where a part is not given.
func newClock(opts Options) clock {
	c := clock{now: opts.Now, rand: opts.Rand, sleep: opts.Sleep}
	if c.now == nil {
		c.now = time.Now
	}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return c
}

// openState takes the state store and counters opts gives, and opens the
// configured ones for what it does not give.
func (g *Gateway) openState(opts Options) error {
	if opts.CloseState != nil {
		g.close = opts.CloseState
	}
	defer func() {
		if g.responses = opts.Responses; g.responses == nil {
			redis, _ := g.counters.(*state.RedisStore)
			g.responses = openResponses(g.cfg, redis)
		}
	}()
	if g.store != nil && g.counters != nil {
		return nil
	}
	counters, store, closeState, err := openState(g.cfg, g.log)
	if err != nil {
		return err
	}
	g.close = closeState
	if g.store == nil {
		g.store = store
	}
	if g.counters == nil {
		g.counters = counters
	}
	return nil
}

// upstreamClient is the HTTP client for upstream u.
func upstreamClient(u config.Upstream) *upstream.Client {
	s := setupOf(u)
	path, headers := s.Path, s.Headers
	var query string
	if u.APIVersion != "" {
		query = "api-version=" + u.APIVersion
	}
	var tokens upstream.TokenSource
	var signer upstream.Signer
	switch u.Auth.Value {
	case upstream.AuthGoogle:
		tokens = upstream.GoogleTokens()
	case upstream.AuthAzure:
		tokens = upstream.AzureTokens()
	case upstream.AuthAWS:
		region := u.Region
		if pu, err := url.Parse(u.URL); err == nil && region == "" {
			region = upstream.RegionOf(pu.Host)
		}
		signer = upstream.AWSSigner(region)
	}
	return upstream.New(upstream.Target{
		Name:             u.Name,
		URL:              u.URL,
		Query:            query,
		Tokens:           tokens,
		Signer:           signer,
		Path:             path,
		APIKey:           u.APIKey,
		AuthHeader:       u.AuthHeader,
		Headers:          headers,
		ForwardHeaders:   canonicalHeaders(u.ForwardHeaders),
		ConnectTimeout:   u.ConnectTimeout,
		HeaderTimeout:    u.HeaderTimeout,
		MaxErrorBody:     u.MaxErrorBodyBytes,
		ErrorBodyTimeout: config.DefaultErrorBodyTimeout,
	})
}

// canonicalHeaders returns the canonical forms of header names.
func canonicalHeaders(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.router.ServeHTTP(w, r) }

func (g *Gateway) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(observe.RequestID, g.checkPath)
	// Each endpoint with its client API, which writes its answers and
	// failures.
	r.Post("/v1/chat/completions", g.instrument(chatAPI{}, g.handle(chatAPI{})))
	r.Post("/v1/responses", g.instrument(responsesAPI{}, g.handle(responsesAPI{})))
	r.Post("/v1/messages", g.instrument(messagesAPI{}, g.handle(messagesAPI{})))
	r.Post("/v1/messages/count_tokens", g.instrument(messagesAPI{}, g.countTokens))
	r.Get("/v1/responses/{id}", g.instrument(chatAPI{}, g.storedResponse))
	r.Delete("/v1/responses/{id}", g.instrument(chatAPI{}, g.storedResponse))
	// The rest of /v1, forwarded as it is on the routes that allow it.
	r.HandleFunc("/v1/*", g.instrument(chatAPI{}, g.passthrough))
	r.Get("/v1/models", g.instrument(chatAPI{}, g.listModels))
	r.NotFound(g.instrument(chatAPI{}, func(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
		return &PassthroughError{Method: r.Method, Path: r.URL.Path, Outside: true}
	}))
	r.MethodNotAllowed(g.instrument(chatAPI{}, g.methodNotAllowed))
	return r
}

// ownMethods are the methods of the gateway's own endpoints: another
// method on one of them is a 405, not a request to forward.
func ownMethods(path string) (string, bool) {
	switch {
	case path == "/v1/chat/completions" || path == "/v1/responses" || path == "/v1/messages" || path == "/v1/messages/count_tokens":
		return "POST", true
	case path == "/v1/models":
		return "GET", true
	case strings.HasPrefix(path, "/v1/responses/") && !strings.Contains(path[len("/v1/responses/"):], "/"):
		// One stored response (a path below it, or with a trailing "/",
		// is no endpoint of the gateway's).
		return "GET, DELETE", true
	}
	return "", false
}

func (g *Gateway) methodNotAllowed(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
	err := &PassthroughError{Method: r.Method, Path: r.URL.Path}
	if allow, own := ownMethods(r.URL.Path); own {
		err.Methods = strings.Split(allow, ", ")
	}
	return err
}

// checkPath refuses, before routing, a request whose path could name
// something else once decoded or normalized (upstream.CheckEscapedPath).
func (g *Gateway) checkPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := upstream.CheckEscapedPath(r.URL); err != nil {
			g.instrument(chatAPI{}, func(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
				leaveBody(w)
				return err
			})(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// State is what a gateway hands to its successor on a reload: its
// counters, remembered reasoning, stored responses, and what releases
// them.
type State struct {
	Counters  state.Store
	Reasoning state.TenantStore
	Responses state.TenantStore
	Close     func()
}

// HandOverState gives this gateway's state to its successor on a reload:
// this gateway no longer closes it.
func (g *Gateway) HandOverState() State {
	s := State{Counters: g.counters, Reasoning: g.store, Responses: g.responses, Close: g.close}
	g.close = func() {}
	return s
}

// TakeBackState undoes HandOverState when the successor could not start.
func (g *Gateway) TakeBackState(s State) { g.close = s.Close }

// Close releases the upstream clients' idle connections and the state
// store's.
func (g *Gateway) Close() {
	for _, c := range g.clients {
		c.CloseIdleConnections()
	}
	g.close()
}

// SimulatedHeader is set, to "sim", on every response a built-in
// simulator served, and on every response of a gateway whose upstreams are
// all simulated (the embedded default config): a deployment started
// without its config is noticed at once.
const SimulatedHeader = "X-Toolgate-Upstream"

// Simulated reports whether every upstream is a built-in simulator.
func (g *Gateway) Simulated() bool { return g.simulated }

// handlerFunc serves one endpoint, writing its answer into rec; a
// failure before anything was written it returns, for instrument to
// write (the one place a handler's failure is written, in its client
// API's shape).
type handlerFunc func(w http.ResponseWriter, r *http.Request, rec *observe.Record) error

// instrument runs h with a fresh access Record and a writer that counts
// what it sends, recovers a panic (re-panicking http.ErrAbortHandler, and
// writing a 500 only if nothing was sent yet), then emits the record once:
// one access-log line and the metrics. A panic after something was sent
// breaks the connection off once the record is out (http.ErrAbortHandler):
// the client sees a cut response, never one that merely stops, as a
// stream without its end marker would to an SDK that takes EOF for the
// end.
func (g *Gateway) instrument(api clientAPI, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		rec := &observe.Record{
			RequestID: observe.RequestIDFrom(r.Context()),
			Method:    r.Method,
			Path:      wire.Clip(r.URL.Path),
			Start:     time.Now(),
			StateMode: g.cfg.State.OnError.Name,
		}
		r, span := g.startSpan(r, rec)
		defer func() {
			broken := false
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				g.log.Error("panic serving request", zap.String("request_id", rec.RequestID),
					zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
				rec.Panicked = true
				broken = cw.wroteHeader
				if !cw.wroteHeader {
					status, body := internalError()
					end(rec, ending{status: status, err: fmt.Errorf("panic: %v", p)})
					writeErrorBody(cw, status, body)
				}
			}
			defer func() {
				if broken {
					panic(http.ErrAbortHandler)
				}
			}()
			rec.Duration = time.Since(rec.Start)
			rec.BytesOut = cw.n
			if rec.Status == 0 {
				rec.Status = cw.status
			}
			if cw.wroteHeader && !rec.ClientGone && !rec.Stream {
				// The client has its whole answer before the record is
				// written: logging adds nothing to its latency. A stream's
				// last event is left to leave with the end of its chunked
				// body once the handler returns (the record's tens of
				// microseconds later): one write instead of two.
				_ = http.NewResponseController(cw.ResponseWriter).Flush()
			}
			g.metrics.Observe(rec)
			rec.EndServerSpan(span)
			rec.Log(g.log)
			g.console.Add(rec)
		}()
		if g.simulated {
			w.Header().Set(SimulatedHeader, "sim")
		}
		defer g.pending.received(r)
		if !g.pending.begin(r) {
			leaveBody(w)
			g.fail(cw, r, rec, api, &IntakeError{Kind: IntakePending,
				Msg: "The gateway is receiving too many requests at once; retry shortly."})
			return
		}
		if err := h(cw, r, rec); err != nil {
			g.fail(cw, r, rec, api, err)
		}
	}
}

// ending is what a request came to, for its record: the status the
// client got (499: it left first), how it ended, and the error, if any.
type ending struct {
	status     int
	outcome    string // "" with an error: rejected; else ok
	kind       string // error_kind
	err        error
	clientGone bool
}

// end writes how a request ended into its record: the one place that sets
// the record's status, outcome, error and error kind. A later ending (an
// attempt that went on after a first failure) replaces an earlier one.
func end(rec *observe.Record, e ending) {
	rec.Status, rec.ErrorKind, rec.ClientGone = e.status, e.kind, rec.ClientGone || e.clientGone
	rec.Outcome = e.outcome
	if rec.Outcome == "" {
		rec.Outcome = observe.OutcomeOK
		if e.err != nil {
			rec.Outcome = observe.OutcomeRejected
		}
	}
	if e.err != nil {
		rec.Error = e.err.Error()
	}
}

// writeErrorBody writes an OpenAI error body with status.
func writeErrorBody(w http.ResponseWriter, status int, body wire.ErrorBody) {
	b := body.JSON()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// countingWriter counts the bytes and remembers the status written through
// it. It exposes FlushError and Unwrap so http.ResponseController reaches
// the connection.
type countingWriter struct {
	http.ResponseWriter
	n           int64
	status      int
	wroteHeader bool
}

func (c *countingWriter) WriteHeader(code int) {
	if !c.wroteHeader {
		c.status, c.wroteHeader = code, true
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if !c.wroteHeader {
		c.status, c.wroteHeader = http.StatusOK, true
	}
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) FlushError() error {
	if !c.wroteHeader {
		c.status, c.wroteHeader = http.StatusOK, true
	}
	return http.NewResponseController(c.ResponseWriter).Flush()
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// sleep waits d, or until ctx ends: it reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func keyName(k *auth.Key) string {
	if k == nil {
		return ""
	}
	return k.Name
}

// tenant names the client key whose state (stored responses, remembered
// reasoning) a request reads and writes: the key's name, "open" on a
// gateway without keys.
func tenant(k *auth.Key) string {
	if k == nil {
		return "open"
	}
	return k.Name
}

// stateFailed logs and records a failed state-store operation and reports
// whether the request must be refused (fail_closed).
func (g *Gateway) stateFailed(x *exchange, op string, err error) bool {
	x.rec.StateErrors = append(x.rec.StateErrors, op)
	g.log.Warn("state store unavailable", zap.String("request_id", x.rec.RequestID), zap.String("operation", op),
		zap.Stringer("on_error", g.cfg.State.OnError.Value), zap.Error(err))
	return g.failClosed
}

// leaveBody prepares the answer to a request whose body will not be read
// (refused before it, or while it arrived): the connection is closed after
// the answer, and what is left of the body is not waited for. Without
// both, net/http would read and discard up to 256 KB of it first — before
// the answer is written, or after it with no deadline — and a client that
// stops sending would hold the connection and its goroutine for as long as
// it likes.
func leaveBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // unsupported by test recorders
}

// leftBody reports whether leaveBody prepared w's answer. Its read
// deadline fails net/http's background read of the connection, which
// cancels the request's context: that end is the gateway's own doing, not
// the client leaving, and the refusal must still be written.
func leftBody(w http.ResponseWriter) bool { return w.Header().Get("Connection") == "close" }
