package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/wire"
)

// StateError is a request refused because the state store (Redis) could
// not be reached and state.on_error is fail_closed.
type StateError struct{ Err error }

func (e *StateError) Error() string { return "state store unavailable: " + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// Rate-limit reasons, as in LimitError.Limit and the rejections metric.
const (
	limitRequests = "requests_per_minute"
	limitTokens   = "tokens_per_minute"
)

// admit runs the counted admission of a request that nothing else
// refused: the session's model calls (maxCalls) and the key's requests and
// tokens per minute, in one store operation. It sets the x-ratelimit-*
// headers of the key's limits on w. A refusal is a *budget.LimitError; a
// store failure is a *StateError with fail_closed, and is admitted (logged
// and counted) with fail_open.
func (g *Gateway) admit(ctx context.Context, w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, key *clientKey, limits budget.Limits, rec *observe.Record) error {
	// Each counter with what it limits: maxCalls, or a rate limit's
	// reason, which also names its x-ratelimit-* unit.
	var buf [3]budget.Check
	var limitOf [3]string
	checks := buf[:0]
	var keyName string
	var rl config.RateLimit
	if key != nil {
		keyName, rl = key.cfg.Name, key.cfg.RateLimit
	}
	if limits.MaxCalls != budget.Unlimited { // the session is looked up only when a call limit applies
		if session := g.session(r, req); session != "" {
			limitOf[len(checks)] = "maxCalls"
			checks = append(checks, budget.Check{Key: "calls:" + keyName + ":" + session, Limit: int64(limits.MaxCalls), Window: g.cfg.Sessions.Window, Cost: 1})
		}
	}
	if rl.RequestsPerMinute > 0 {
		limitOf[len(checks)] = limitRequests
		checks = append(checks, budget.Check{Key: "rpm:" + keyName, Limit: rl.RequestsPerMinute, Window: time.Minute, Cost: 1})
	}
	if rl.TokensPerMinute > 0 {
		limitOf[len(checks)] = limitTokens
		checks = append(checks, budget.Check{Key: "tpm:" + keyName, Limit: rl.TokensPerMinute, Window: time.Minute})
	}
	if len(checks) == 0 {
		return nil
	}
	var counts [3]budget.Count
	refused, err := g.counters.Admit(ctx, checks, counts[:])
	if err != nil {
		if g.stateFailed("admit", rec, err) {
			return &StateError{Err: err}
		}
		return nil
	}
	h := w.Header()
	for i, c := range checks {
		if i == refused || refused < 0 {
			setRateHeaders(h, limitOf[i], c, counts[i])
		}
	}
	if refused < 0 {
		return nil
	}
	c, n := checks[refused], counts[refused]
	h.Set("Retry-After", strconv.Itoa(retrySeconds(n.Reset)))
	le := &budget.LimitError{Limit: limitOf[refused], Max: int(c.Limit), Got: int(n.Used), RetryAfter: n.Reset}
	if le.Limit == "maxCalls" {
		le.Got = int(c.Limit) + 1
	}
	return le
}

// setRateHeaders sets OpenAI's x-ratelimit-* headers for a key's rate
// limit (the maxCalls counter has none).
func setRateHeaders(h http.Header, limit string, c budget.Check, n budget.Count) {
	var unit string
	switch limit {
	case limitRequests:
		unit = "requests"
	case limitTokens:
		unit = "tokens"
	default:
		return
	}
	h.Set("X-Ratelimit-Limit-"+unit, strconv.FormatInt(c.Limit, 10))
	h.Set("X-Ratelimit-Remaining-"+unit, strconv.FormatInt(max(c.Limit-n.Used, 0), 10))
	h.Set("X-Ratelimit-Reset-"+unit, n.Reset.Round(time.Millisecond).String())
}

// stateFailed logs and counts a failed state-store operation and reports
// whether the request must be refused (fail_closed).
func (g *Gateway) stateFailed(op string, rec *observe.Record, err error) bool {
	mode := g.cfg.State.OnError
	g.metrics.StateError(op, mode)
	g.log.Warn("state store unavailable", zap.String("request_id", rec.RequestID), zap.String("operation", op),
		zap.String("on_error", mode), zap.Error(err))
	return mode == "fail_closed"
}

// settle counts a finished request's budget refusal, if any, and its
// token usage: the tokens metric and, when the key has a tokens-per-minute
// limit, the key's counter.
func (g *Gateway) settle(ctx context.Context, key *clientKey, rec *observe.Record) {
	if rec.Limited != "" {
		g.metrics.Rejected(rec.Route, rec.Key, rec.Limited)
	}
	if rec.TotalTokens == 0 && rec.PromptTokens == 0 && rec.CompletionTokens == 0 {
		return
	}
	g.metrics.Tokens(rec.Key, rec.PromptTokens, rec.CompletionTokens)
	if key == nil || key.cfg.RateLimit.TokensPerMinute <= 0 {
		return
	}
	// The client may be gone; the tokens were spent all the same.
	ctx = context.WithoutCancel(ctx)
	if err := g.counters.Add(ctx, "tpm:"+key.cfg.Name, rec.TotalTokens, time.Minute); err != nil {
		g.stateFailed("add_tokens", rec, err)
	}
}

// noteLimit records in rec which budget refused or cut a request, for the
// access log and toolgate_budget_rejections_total.
func noteLimit(rec *observe.Record, err error) {
	if le, ok := errors.AsType[*budget.LimitError](err); ok {
		rec.Limited = le.Limit
	} else if _, ok := errors.AsType[*StateError](err); ok {
		rec.Limited = "state_unavailable"
	} else if errors.Is(err, budget.ErrCallTimeout) {
		rec.Limited = "callTimeoutMs"
	}
}

// addUsage adds one attempt's reported usage to rec.
func addUsage(rec *observe.Record, u wire.Usage) {
	rec.PromptTokens += u.PromptTokens
	rec.CompletionTokens += u.CompletionTokens
	rec.TotalTokens += u.TotalTokens
}

// openState returns the configured counter store and reasoning store.
func openState(cfg *config.Config, log *zap.Logger, m *observe.Metrics) (budget.Store, policy.ReasoningStore, func(), error) {
	if cfg.State.Store != "redis" {
		return budget.NewMemory(0, nil), policy.NewMemoryStore(0, 0, nil), func() {}, nil
	}
	r, err := budget.NewRedis(cfg.State.RedisURL, cfg.State.Prefix, cfg.State.Timeout)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := r.Ping(context.Background()); err != nil {
		log.Warn("Redis does not answer yet; requests follow state.on_error until it does",
			zap.String("on_error", cfg.State.OnError), zap.Error(err))
	}
	rs := &redisReasoning{c: r.Client(), prefix: r.Prefix() + "reasoning:", ttl: 24 * time.Hour, timeout: cfg.State.Timeout, log: log, metrics: m, mode: cfg.State.OnError}
	return r, rs, func() { r.Close() }, nil
}

// redisReasoning is the ReasoningStore replicas share: each turn's
// reasoning is a Redis string with a 24 h expiry. A Redis failure is a
// miss (Get) or a lost turn (Put), logged and counted; the route's on_miss
// decides what a miss does.
type redisReasoning struct {
	c       *redis.Client
	prefix  string
	ttl     time.Duration
	timeout time.Duration
	log     *zap.Logger
	metrics *observe.Metrics
	mode    string
}

func (s *redisReasoning) Get(key string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	v, err := s.c.Get(ctx, s.prefix+key).Result()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			s.failed("reasoning_get", err)
		}
		return "", false
	}
	return v, true
}

func (s *redisReasoning) Put(key, reasoning string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.c.Set(ctx, s.prefix+key, reasoning, s.ttl).Err(); err != nil {
		s.failed("reasoning_put", err)
	}
}

func (s *redisReasoning) failed(op string, err error) {
	s.metrics.StateError(op, s.mode)
	s.log.Warn("state store unavailable", zap.String("operation", op), zap.Error(err))
}
