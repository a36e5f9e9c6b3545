package budget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/state"
)

// Admission is what one request asks of the counters: a call of its
// session (when a call limit applies and the session is known) and its
// key's requests and tokens per minute.
type Admission struct {
	Key      string // the client key's name, "" for none
	Session  string // "" when the request names none
	MaxCalls int    // Unlimited for none
	Window   time.Duration
	// RequestsPerMinute and TokensPerMinute are the key's rates; 0 is
	// none.
	RequestsPerMinute, TokensPerMinute int64
	// Spend is the key's spend limit (Max 0: none), counted in the period
	// holding Now.
	Spend Spend
	Now   time.Time
	// Reserve is what the request may cost at worst, in nano-dollars:
	// admitted only if it fits in what is left of the key's spend, and
	// counted at once, so that requests in flight together cannot spend
	// past the limit. The request then settles to its real cost
	// (Settle). 0 reserves nothing: the limit is only checked.
	Reserve int64
	// Check only checks that every counter has room, counting nothing:
	// a request refused cheaply before its costly work, admitted (and
	// counted) later.
	Check bool
}

// Rate is one of the key's rate limits as admission left it, for the
// x-ratelimit-* headers.
type Rate struct {
	Limit Limit // RequestsPerMinute, TokensPerMinute or MaxCost (nano-dollars)
	Max   int64
	Used  int64
	Reset time.Duration
}

// Admitted is what a counted admission decided: the key's rates (for its
// headers), whether or not it was refused.
type Admitted struct {
	rates [3]Rate
	n     int
}

// Rates returns the key's rates as admission left them.
func (a *Admitted) Rates() []Rate { return a.rates[:a.n] }

// Admit runs the counted admission of a request nothing else refused, in
// one store operation (all or nothing): a refusal is a *LimitError (with
// the rate that refused it in Rates); an error of the store is returned
// as it is, for the caller's state.on_error.
func Admit(ctx context.Context, store state.Store, a Admission) (Admitted, error) {
	var buf [4]state.Check
	var limitOf [4]Limit
	checks := buf[:0]
	if a.MaxCalls != Unlimited && a.Session != "" {
		limitOf[len(checks)] = MaxCalls
		checks = append(checks, state.Check{Key: state.KeyTag(a.Key) + "calls:" + sessionID(a.Session), Limit: int64(a.MaxCalls), Window: a.Window, Cost: 1})
	}
	if a.RequestsPerMinute > 0 {
		limitOf[len(checks)] = RequestsPerMinute
		checks = append(checks, state.Check{Key: state.KeyTag(a.Key) + "rpm", Limit: a.RequestsPerMinute, Window: time.Minute, Cost: 1})
	}
	if a.TokensPerMinute > 0 {
		limitOf[len(checks)] = TokensPerMinute
		checks = append(checks, state.Check{Key: state.KeyTag(a.Key) + "tpm", Limit: a.TokensPerMinute, Window: time.Minute})
	}
	if a.Spend.Max > 0 {
		// The worst case is reserved (or, unpriced, room left checked); the
		// request settles to what it cost (Settle).
		name, left := a.Spend.Period.span(a.Now)
		limitOf[len(checks)] = MaxCost
		checks = append(checks, state.Check{Key: state.KeyTag(a.Key) + name, Limit: a.Spend.Max, Window: left, Cost: max(a.Reserve, 0)})
	}
	var out Admitted
	if len(checks) == 0 {
		return out, nil
	}
	if a.Check {
		for i := range checks {
			checks[i].Cost = 0
		}
	}
	// The store takes the checks and counts on the heap: copied there only
	// for a request that has any, so buf stays on the stack.
	held := slices.Clone(checks)
	counts := make([]state.Count, len(held))
	refused, err := store.Admit(ctx, held, counts)
	if err != nil {
		return out, err
	}
	for i, c := range checks {
		if limitOf[i] != MaxCalls && (refused < 0 || i == refused) {
			out.rates[out.n] = Rate{Limit: limitOf[i], Max: c.Limit, Used: counts[i].Used, Reset: counts[i].Reset}
			out.n++
		}
	}
	if refused < 0 {
		return out, nil
	}
	c, n := checks[refused], counts[refused]
	le := &LimitError{Limit: limitOf[refused], Max: int(c.Limit), Got: int(n.Used), RetryAfter: n.Reset}
	if le.Limit == MaxCalls {
		le.Got = int(c.Limit) + 1
	}
	return out, le
}

// AddTokens counts a finished response's tokens against key's tokens per
// minute.
func AddTokens(ctx context.Context, store state.Store, key string, tokens int64) error {
	return store.Add(ctx, state.KeyTag(key)+"tpm", tokens, time.Minute)
}

// sessionID is the counter name of a session: a hash of the id the
// client sent (a header, user, metadata.session_id), so that an id of
// megabytes costs the store no more than one of a few bytes.
func sessionID(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}
