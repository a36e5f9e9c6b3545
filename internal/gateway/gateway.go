package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
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
	// Store holds reasoning to restore and Counters the admission
	// counters; nil means what the config's state block says (memory, or
	// Redis).
	Store    policy.ReasoningStore
	Counters budget.Store
	// CloseState releases Store and Counters when the gateway closes
	// (given with them by HandOverState); nil releases nothing.
	CloseState func()
	// Pending is the server's guard on connections still sending their
	// request (see NewServer); nil means none.
	Pending *Pending
}

// Gateway serves the main listener. It is safe for concurrent use.
type Gateway struct {
	cfg       *config.Config
	log       *zap.Logger
	metrics   *observe.Metrics
	upstreams map[string]*upstream.Client
	models    []byte
	schemas   *policy.Schemas
	reasoning map[string]policy.Reasoning // by route name, resolved once
	store     policy.ReasoningStore
	limits    map[string]budget.Limits // by route name, resolved once
	counters  budget.Store
	keys      []clientKey
	pending   *Pending
	close     func() // releases the state store
}

// New returns the gateway for opts and its main listener's handler. It
// fails only when the configured state store cannot be set up (a Redis
// that does not answer yet is not a failure: state.on_error applies).
func New(opts Options) (*Gateway, http.Handler, error) {
	g := &Gateway{
		cfg:       opts.Config,
		log:       opts.Logger,
		metrics:   opts.Metrics,
		upstreams: map[string]*upstream.Client{},
		schemas:   policy.NewSchemas(0),
		store:     opts.Store,
		counters:  opts.Counters,
		pending:   opts.Pending,
		close:     func() {},
	}
	if opts.CloseState != nil {
		g.close = opts.CloseState
	}
	if g.store == nil || g.counters == nil {
		counters, store, closeState, err := openState(g.cfg, g.log, g.metrics)
		if err != nil {
			return nil, nil, err
		}
		g.close = closeState
		if g.store == nil {
			g.store = store
		}
		if g.counters == nil {
			g.counters = counters
		}
	}
	for _, u := range g.cfg.Upstreams {
		g.upstreams[u.Name] = upstream.New(upstream.Target{
			Name:             u.Name,
			URL:              u.URL,
			APIKey:           u.APIKey,
			AuthHeader:       u.AuthHeader,
			Headers:          u.Headers,
			ConnectTimeout:   u.ConnectTimeout,
			HeaderTimeout:    u.HeaderTimeout,
			MaxErrorBody:     u.MaxErrorBodyBytes,
			ErrorBodyTimeout: config.DefaultErrorBodyTimeout,
		})
	}
	g.models = modelList(g.cfg, nil)
	g.keys = resolveKeys(g.cfg)
	g.reasoning = map[string]policy.Reasoning{}
	g.limits = map[string]budget.Limits{}
	for _, r := range g.cfg.Routes {
		g.reasoning[r.Name] = resolveReasoning(r.Reasoning)
		g.limits[r.Name] = resolveBudget(r.Budget)
	}

	r := chi.NewRouter()
	r.Use(observe.RequestID)
	r.Post("/v1/chat/completions", g.instrument(g.chat))
	r.Get("/v1/models", g.instrument(g.listModels))
	r.NotFound(g.instrument(func(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
		g.writeError(w, rec, http.StatusNotFound, wire.NewError("invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Unknown request URL: %s %s. This gateway serves POST /v1/chat/completions and GET /v1/models.", wire.Clip(r.Method), wire.Clip(r.URL.Path))))
	}))
	r.MethodNotAllowed(g.instrument(func(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
		allow := "POST"
		if r.URL.Path == "/v1/models" {
			allow = "GET"
		}
		w.Header().Set("Allow", allow)
		g.writeError(w, rec, http.StatusMethodNotAllowed, wire.NewError("invalid_request_error", "method_not_allowed", "",
			fmt.Sprintf("%s is not allowed on %s; use %s.", wire.Clip(r.Method), wire.Clip(r.URL.Path), allow)))
	}))
	return g, r, nil
}

// HandOverState gives this gateway's state (counters, remembered
// reasoning, and what releases them) to its successor on a reload: this
// gateway no longer closes it.
func (g *Gateway) HandOverState() (budget.Store, policy.ReasoningStore, func()) {
	closeState := g.close
	g.close = func() {}
	return g.counters, g.store, closeState
}

// TakeBackState undoes HandOverState when the successor could not start.
func (g *Gateway) TakeBackState(_ budget.Store, _ policy.ReasoningStore, closeState func()) {
	g.close = closeState
}

// Close releases the upstream clients' idle connections and the state
// store's.
func (g *Gateway) Close() {
	for _, c := range g.upstreams {
		c.CloseIdleConnections()
	}
	g.close()
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, rec *observe.Record)

// instrument runs h with a fresh access Record and a writer that counts
// what it sends, recovers a panic (re-panicking http.ErrAbortHandler, and
// writing a 500 only if nothing was sent yet), then emits the record once:
// one access-log line and the metrics.
func (g *Gateway) instrument(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		rec := &observe.Record{
			RequestID: observe.RequestIDFrom(r.Context()),
			Method:    r.Method,
			Path:      wire.Clip(r.URL.Path),
			Start:     time.Now(),
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				g.log.Error("panic serving request", zap.String("request_id", rec.RequestID),
					zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
				rec.Error = fmt.Sprint(p)
				if !cw.wroteHeader {
					_, body := errorFor(fmt.Errorf("panic"))
					g.writeError(cw, rec, http.StatusInternalServerError, body)
				}
			}
			rec.Duration = time.Since(rec.Start)
			rec.BytesOut = cw.n
			if rec.Status == 0 {
				rec.Status = cw.status
			}
			if cw.wroteHeader && !rec.ClientGone {
				// The client has its whole answer before the record is
				// written: logging adds nothing to its latency.
				_ = http.NewResponseController(cw.ResponseWriter).Flush()
			}
			g.metrics.Observe(rec)
			rec.Log(g.log)
		}()
		defer g.pending.received(r)
		if !g.pending.begin(r) {
			leaveBody(w)
			g.fail(cw, r, rec, &IntakeError{Kind: IntakePending,
				Msg: "The gateway is receiving too many requests at once; retry shortly."})
			return
		}
		h(cw, r, rec)
	}
}

// writeError writes an OpenAI error body with status and records it.
func (g *Gateway) writeError(w http.ResponseWriter, rec *observe.Record, status int, body wire.ErrorBody) {
	rec.Status = status
	if rec.Outcome == "" {
		rec.Outcome = observe.OutcomeRejected
	}
	if rec.Error == "" {
		rec.Error = body.Error.Message
	}
	b := body.JSON()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

func (g *Gateway) listModels(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
	key, err := g.authenticate(r)
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	list := g.models
	if key != nil {
		rec.Key = key.cfg.Name
		list = key.models
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(list)
	rec.Status, rec.Outcome = http.StatusOK, observe.OutcomeOK
}

// modelList is GET /v1/models' body for a key (nil: every route). A route
// is listed when the key may use its model as written; a pattern route
// the key may use only in part is listed by the key's own names and
// patterns that the route serves (a key limited to "sim-*" sees "sim-*",
// not the route's "*"). Each id is listed once, owned by the upstream of
// the route that serves it.
func modelList(cfg *config.Config, key *config.Key) []byte {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	var listed wire.Names
	add := func(id, upstream string) {
		if listed.Add(id) {
			list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: upstream})
		}
	}
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		switch {
		case key == nil || key.Allows(r.Model):
			add(r.Model, r.Upstream)
		case r.IsPattern():
			for _, m := range key.Models {
				if served, ok := cfg.Match(m); ok && served == r {
					add(m, r.Upstream)
				}
			}
		}
	}
	b, _ := json.Marshal(list)
	return b
}

// countingWriter counts the bytes and remembers the status written through
// it. It exposes FlushError and Unwrap so go-sse and http.ResponseController
// reach the connection.
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

// resolveReasoning turns a route's reasoning config into the policy's form,
// encoding configured values as JSON once.
func resolveReasoning(c config.Reasoning) policy.Reasoning {
	encode := func(m map[string]any) map[string]json.RawMessage {
		out := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			b, _ := json.Marshal(v) // YAML-decoded values always marshal
			out[k] = b
		}
		return out
	}
	r := policy.Reasoning{Format: c.Format, Level: c.Level, ClientEffort: c.ClientEffort, Budgets: c.Budgets, Fields: encode(c.Fields)}
	if len(c.Custom) > 0 {
		r.Custom = map[string]map[string]json.RawMessage{}
		for level, fields := range c.Custom {
			r.Custom[level] = encode(fields)
		}
	}
	return r
}

// resolveBudget resolves a route's budget block (config validation has
// checked the preset); no block means no limits.
func resolveBudget(b *config.Budget) budget.Limits {
	if b == nil {
		return budget.NoLimits
	}
	val := func(l *config.Limit) *int {
		if l == nil {
			return nil
		}
		n := int(*l)
		return &n
	}
	l, _ := budget.Resolve(budget.Object{Preset: b.Preset, MaxCalls: val(b.MaxCalls), MaxInputChars: val(b.MaxInputChars),
		MaxOutputChars: val(b.MaxOutputChars), MaxOutputTokens: val(b.MaxOutputTokens), CallTimeoutMs: val(b.CallTimeoutMs)})
	return l
}
