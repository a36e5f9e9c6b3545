package gateway

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/policy"
)

// admit runs the counted admission of a request that nothing else
// refused: the session's model calls (maxCalls) and the key's requests and
// tokens per minute, in one store operation. It sets the x-ratelimit-*
// headers of the key's limits. A refusal is a *budget.LimitError; a store
// failure is a *budget.StateError with fail_closed, and is admitted
// (logged and counted) with fail_open.
func (g *Gateway) admit(x *exchange, pr *prepared) error { return g.admitWith(x, pr.limits.MaxCalls) }

// admitWith is admit with the session's call limit (budget.Unlimited for
// a request that is no model call of a session: the passthrough's).
func (g *Gateway) admitWith(x *exchange, maxCalls int) error {
	a := budget.Admission{MaxCalls: maxCalls, Window: g.cfg.Sessions.Window}
	if x.key != nil {
		a.Key, a.RequestsPerMinute, a.TokensPerMinute = x.key.Name, x.key.RateLimit.RequestsPerMinute, x.key.RateLimit.TokensPerMinute
		a.Spend, a.Now = g.keyPlans[x.key.Name].spend, g.clock.now()
	}
	if a.MaxCalls != budget.Unlimited { // the session is looked up only when a call limit applies
		a.Session = g.session(x)
	}
	admitted, err := budget.Admit(x.r.Context(), g.counters, a)
	h := x.w.Header()
	for _, r := range admitted.Rates() {
		unit, limit, remaining := "requests", strconv.FormatInt(r.Max, 10), strconv.FormatInt(max(r.Max-r.Used, 0), 10)
		switch r.Limit {
		case budget.TokensPerMinute:
			unit = "tokens"
		case budget.MaxCost: // dollars
			unit, limit, remaining = "cost", dollars(r.Max), dollars(max(r.Max-r.Used, 0))
		}
		h.Set("X-Ratelimit-Limit-"+unit, limit)
		h.Set("X-Ratelimit-Remaining-"+unit, remaining)
		h.Set("X-Ratelimit-Reset-"+unit, r.Reset.Round(time.Millisecond).String())
	}
	if le, ok := errors.AsType[*budget.LimitError](err); ok {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(le.RetryAfter)))
		return err
	}
	if err != nil && g.stateFailed(x, "admit", err) {
		return &budget.StateError{Err: err}
	}
	return nil
}

// stateFailed logs and records a failed state-store operation and reports
// whether the request must be refused (fail_closed).
func (g *Gateway) stateFailed(x *exchange, op string, err error) bool {
	x.rec.StateErrors = append(x.rec.StateErrors, op)
	g.log.Warn("state store unavailable", zap.String("request_id", x.rec.RequestID), zap.String("operation", op),
		zap.String("on_error", g.cfg.State.OnError), zap.Error(err))
	return g.failClosed
}

// dollars formats nano-dollars as dollars, to the micro-dollar.
func dollars(nano int64) string { return strconv.FormatFloat(budget.USD(nano), 'f', 6, 64) }

// settle counts a finished request's tokens against its key's tokens per
// minute, and its cost against its key's spend, when it has those limits.
func (g *Gateway) settle(x *exchange) {
	if x.key == nil {
		return
	}
	// The client may be gone; the tokens were spent all the same.
	ctx := context.WithoutCancel(x.r.Context())
	if x.key.RateLimit.TokensPerMinute > 0 && x.rec.TotalTokens > 0 {
		if err := budget.AddTokens(ctx, g.counters, x.key.Name, x.rec.TotalTokens); err != nil {
			g.stateFailed(x, "add_tokens", err)
		}
	}
	if spend := g.keyPlans[x.key.Name].spend; spend.Max > 0 && x.rec.CostModel != "" {
		cost := budget.Cost{Key: x.key.Name, Period: spend.Period, At: g.clock.now(), Nano: budget.Nano(x.rec.CostUSD)}
		if err := budget.AddCost(ctx, g.counters, cost); err != nil {
			g.stateFailed(x, "add_cost", err)
		}
	}
}

// ResponseStore keeps the Responses API's stored responses (memory, or
// the state store's Redis), each under its id, for responses.ttl.
type ResponseStore interface {
	Get(ctx context.Context, key string) (string, bool, error)
	Put(ctx context.Context, key, v string) error
	Delete(ctx context.Context, key string) (bool, error)
}

// openResponses returns the configured response store, nil for none; r
// is the state store's Redis, nil when the state is in memory.
func openResponses(cfg *config.Config, r *budget.Redis) ResponseStore {
	switch cfg.Responses.Store {
	case "memory":
		return policy.NewMemoryStore(10000, cfg.Responses.TTL, nil)
	case "redis":
		if r != nil {
			return r.Strings("responses:", cfg.Responses.TTL)
		}
	}
	return nil
}

// openState returns the configured counter store and reasoning store.
func openState(cfg *config.Config, log *zap.Logger) (budget.Store, policy.ReasoningStore, func(), error) {
	if cfg.State.Store != "redis" {
		return budget.NewMemory(0, nil), policy.NewMemoryStore(0, 0, nil), func() {}, nil
	}
	r, err := budget.NewRedis(cfg.State.RedisURL, cfg.State.Prefix, cfg.State.Timeout, cfg.State.Cluster)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := r.Ping(context.Background()); err != nil {
		log.Warn("Redis does not answer yet; requests follow state.on_error until it does",
			zap.String("on_error", cfg.State.OnError), zap.Error(err))
	}
	return r, r.Strings("reasoning:", 24*time.Hour), func() { r.Close() }, nil
}
