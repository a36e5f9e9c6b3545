package gateway

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/state"
)

// admit runs the counted admission of a request that nothing else
// refused: the session's model calls (maxCalls) and the key's requests and
// tokens per minute, in one store operation. It sets the x-ratelimit-*
// headers of the key's limits. A refusal is a *budget.LimitError; a store
// failure is a *budget.StateError with fail_closed, and is admitted
// (logged and counted) with fail_open.
func (g *Gateway) admit(x *exchange, pr *prepared) error {
	return g.admitWith(x, pr.limits.MaxCalls, len(pr.body), sentOutputLimit(pr))
}

// admitWith is admit with the session's call limit (budget.Unlimited for
// a request that is no model call of a session: the passthrough's), and
// the size of the body sent and its output limit, which bound what the
// request may cost: with a spend limit, that worst case is reserved.
func (g *Gateway) admitWith(x *exchange, maxCalls, bodyBytes int, outputTokens int64) error {
	a := budget.Admission{MaxCalls: maxCalls, Window: g.cfg.Sessions.Window}
	if x.key != nil {
		a.Key, a.RequestsPerMinute, a.TokensPerMinute = x.key.Name, x.key.RateLimit.RequestsPerMinute, x.key.RateLimit.TokensPerMinute
		a.Spend, a.Now = g.keyPlans[x.key.Name].spend, g.clock.now()
		if g.priced(x) {
			a.Reserve = g.worstCost(x.rec.Model, bodyBytes, outputTokens)
		}
	}
	if a.MaxCalls != budget.Unlimited { // the session is looked up only when a call limit applies
		a.Session = g.session(x)
	}
	admitted, err := budget.Admit(x.r.Context(), g.counters, a)
	if err = g.admitted(x, admitted, err, "admit"); err == nil {
		x.reserved, x.admittedAt = a.Reserve, a.Now
	}
	return err
}

// precheck refuses a request whose key is already at one of its rate or
// spend limits, before the request is translated, repaired or priced:
// the key's counters are checked, nothing counted (the counted admission
// runs once the request to send is known). A key without such limits
// costs nothing here.
func (g *Gateway) precheck(x *exchange) error {
	if x.key == nil {
		return nil
	}
	a := budget.Admission{Key: x.key.Name, MaxCalls: budget.Unlimited, RequestsPerMinute: x.key.RateLimit.RequestsPerMinute,
		TokensPerMinute: x.key.RateLimit.TokensPerMinute, Spend: g.keyPlans[x.key.Name].spend, Now: g.clock.now(), Check: true}
	if a.RequestsPerMinute <= 0 && a.TokensPerMinute <= 0 && a.Spend.Max <= 0 {
		return nil
	}
	admitted, err := budget.Admit(x.r.Context(), g.counters, a)
	return g.admitted(x, admitted, err, "precheck")
}

// admitted sets the x-ratelimit-* headers of the key's limits as an
// admission (op) left them and returns its refusal: a
// *budget.LimitError with Retry-After, or a *budget.StateError when the
// store failed and state.on_error is fail_closed (fail_open admits).
func (g *Gateway) admitted(x *exchange, admitted budget.Admitted, err error, op string) error {
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
	if err != nil && g.stateFailed(x, op, err) {
		return &budget.StateError{Err: err}
	}
	return nil
}

// worstCost is what a request to model may cost at worst, in
// nano-dollars, at the model's price (0 when it has none): every byte of
// the body sent counted as an input token (a token is at least one byte:
// the gateway has no tokenizer, so this bound holds for every model),
// outputTokens as output tokens.
func (g *Gateway) worstCost(model string, bodyBytes int, outputTokens int64) int64 {
	price, _, ok := g.prices.find(model)
	if !ok {
		return 0
	}
	return price.Cost(int64(bodyBytes), 0, outputTokens)
}

// sentOutputLimit is the output limit a prepared request is sent with:
// its max_completion_tokens or max_tokens (the budget's clamp wrote one
// when it has a limit, and prepare defaultOutput for a priced key), else
// defaultOutput (an anthropic upstream's own; for others, which have
// their own default, unknown here, the request is not priced).
func sentOutputLimit(pr *prepared) int64 {
	for _, f := range []string{pr.plan.upstream.outputLimitField, "max_completion_tokens", "max_tokens"} {
		if raw, ok := pr.req.Get(f); ok {
			if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	return defaultOutput(pr.plan)
}

// defaultOutput is the output limit a request without one is sent with
// on route p when it must have one: the default of a protocol that
// requires one (Anthropic's default_max_tokens, sent always),
// config.DefaultMaxTokens elsewhere (sent for a priced key's request).
func defaultOutput(p *plan) int64 {
	if p.upstream.defaultMaxTokens > 0 {
		return int64(p.upstream.defaultMaxTokens)
	}
	return config.DefaultMaxTokens
}

// priced says whether the request's key has a spend limit, which every
// request it makes reserves its worst cost against.
func (g *Gateway) priced(x *exchange) bool {
	return x.key != nil && g.keyPlans[x.key.Name].spend.Max > 0
}

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
	if spend := g.keyPlans[x.key.Name].spend; spend.Max > 0 && x.admitted {
		cost := budget.Cost{Key: x.key.Name, Period: spend.Period, At: x.admittedAt, Nano: g.spent(x)}
		if err := budget.Settle(ctx, g.counters, cost, x.reserved); err != nil {
			g.stateFailed(x, "add_cost", err)
		}
	}
}

// spent is what a finished request cost, in nano-dollars, for its key's
// spend: the cost of the usage it reported; its reservation when an
// upstream answered but no usage came (a stream cut, a client that left:
// tokens were spent, how many is unknown); nothing when no upstream
// answered.
func (g *Gateway) spent(x *exchange) int64 {
	if x.rec.CostModel != "" {
		return budget.Nano(x.rec.CostUSD)
	}
	for _, a := range x.rec.Attempts {
		switch a.Outcome {
		case observe.AttemptOK, observe.AttemptViolation, observe.AttemptCanceled, observe.AttemptIncomplete, observe.AttemptTimeout:
			return x.reserved
		}
	}
	return 0
}

// openResponses returns the configured response store, nil for none; r
// is the state store's Redis, nil when the state is in memory.
func openResponses(cfg *config.Config, r *state.RedisStore) state.TenantStore {
	switch cfg.Responses.Store.Value {
	case state.Memory:
		return state.NewQuotaStore(state.QuotaOptions{MaxBytes: cfg.Responses.MaxBytes, TenantBytes: cfg.Responses.MaxBytesPerKey, TTL: cfg.Responses.TTL})
	case state.Redis:
		if r != nil {
			return r.Strings("responses:", cfg.Responses.TTL)
		}
	}
	return nil
}

// openState returns the configured counter store and reasoning store.
func openState(cfg *config.Config, log *zap.Logger) (state.Store, state.TenantStore, func(), error) {
	if cfg.State.Store.Value != state.Redis {
		return state.NewMemoryCounters(0, nil), state.NewQuotaStore(state.QuotaOptions{MaxBytes: cfg.ReasoningMaxBytes()}), func() {}, nil
	}
	r, err := state.NewRedisStore(cfg.State.RedisURL, cfg.State.Prefix, cfg.State.Timeout, cfg.State.Cluster)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := r.Ping(context.Background()); err != nil {
		log.Warn("Redis does not answer yet; requests follow state.on_error until it does",
			zap.Stringer("on_error", cfg.State.OnError.Value), zap.Error(err))
	}
	return r, r.Strings("reasoning:", 24*time.Hour), func() { r.Close() }, nil
}
