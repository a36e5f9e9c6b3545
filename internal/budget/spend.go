package budget

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/state"
)

// Spend is counted in nano-dollars (1e-9 USD): integers, so that a
// counter in state.Redis adds exactly, and fine enough for a token of the
// cheapest model.
const nanoPerUSD = 1e9

// USD converts nano-dollars to dollars.
func USD(nano int64) float64 { return float64(nano) / nanoPerUSD }

// Nano converts dollars to nano-dollars, rounding up (a limit or a price
// is never undercounted).
func Nano(usd float64) int64 { return int64(math.Ceil(usd*nanoPerUSD - 1e-6)) }

// Price is a model's price in dollars per million tokens.
type Price struct {
	Input, CachedInput, Output float64
}

// Cost is what a response's usage costs: cached prompt tokens at the
// cached price, the rest of the prompt at the input price, completion
// tokens at the output price; in nano-dollars.
func (p Price) Cost(prompt, cached, completion int64) int64 {
	cached = min(max(cached, 0), prompt)
	// $ per million tokens = 1000 nano-dollars per token.
	return Nano((float64(prompt-cached)*p.Input + float64(cached)*p.CachedInput + float64(completion)*p.Output) / 1e6)
}

// Period is the window a key's spend limit counts over: a calendar day or
// month, in UTC.
type Period uint8

const (
	Day Period = iota
	Month
)

var periodNames = []string{"day", "month"}

func (p Period) String() string { return periodNames[p] }

// Names are the configured names of the periods.
func (Period) Names() []string { return slices.Clone(periodNames) }

// Parse reads a configured period: day or month.
func (Period) Parse(s string) (Period, error) { return enum.Parse[Period](periodNames, s) }

// span returns the counter's name for the period holding now (the period
// is in the name, so a new one starts at zero) and the time left in it.
func (p Period) span(now time.Time) (string, time.Duration) {
	now = now.UTC()
	y, m, d := now.Date()
	if p == Month {
		end := time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
		return "cost:" + now.Format("2006-01"), end.Sub(now)
	}
	end := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	return "cost:" + now.Format("2006-01-02"), end.Sub(now)
}

// Spend is a key's spend limit: at most Max nano-dollars per Period.
type Spend struct {
	Max    int64 // 0: none
	Period Period
}

// Cost is what a finished response cost a key: Nano nano-dollars, spent
// At a time of the key's Period.
type Cost struct {
	Key    string
	Period Period
	At     time.Time
	Nano   int64
}

// AddCost counts a finished response's cost against its key's spend in
// the period holding c.At.
func AddCost(ctx context.Context, store state.Store, c Cost) error {
	name, left := c.Period.span(c.At)
	return store.Add(ctx, state.KeyTag(c.Key)+name, c.Nano, left)
}

// Settle replaces a request's reservation (reserved, counted at its
// admission in the period holding c.At) by its real cost c.Nano: the
// difference is added, negative when the request cost less.
func Settle(ctx context.Context, store state.Store, c Cost, reserved int64) error {
	if c.Nano == reserved {
		return nil
	}
	c.Nano -= reserved
	return AddCost(ctx, store, c)
}
