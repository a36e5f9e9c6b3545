package gateway

import (
	"context"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// judged records the judge's verdict on an attempt's response, and in
// annotate mode the argument validation failures.
func judged(x *exchange, t *try, o policy.Outcome) {
	t.record.Verdict = o.Kind
	if len(o.Annotations) > 0 {
		x.rec.Arguments = joinAnnotations(x.rec.Arguments, o.Annotations)
		x.rec.InvalidArguments += len(o.Annotations)
	}
}

// fixesOf is a response's normalizations as the record counts them.
func fixesOf(f wire.Fixes, at wire.FixChunks) []observe.Count {
	var out []observe.Count
	for name, n := range f.All() {
		out = append(out, observe.Count{Name: name, N: n, At: at.Of(name)})
	}
	return out
}

// kindsOf counts a translator's normalizations by name, in order of first
// appearance.
func kindsOf(kinds []string) []observe.Count {
	var out []observe.Count
	for _, k := range kinds {
		if n := len(out); n > 0 && out[n-1].Name == k {
			out[n-1].N++
			continue
		}
		out = append(out, observe.Count{Name: k, N: 1})
	}
	return out
}

// addUsage adds one attempt's reported usage to the record, and its cost
// when the model it was sent (rec.Model) is priced.
func (g *Gateway) addUsage(rec *observe.Record, u wire.Usage) {
	rec.PromptTokens += u.PromptTokens
	rec.CompletionTokens += u.CompletionTokens
	rec.TotalTokens += u.TotalTokens
	rec.CachedTokens += u.CachedTokens
	if price, name, ok := g.prices.find(rec.Model); ok && u.TotalTokens > 0 {
		rec.CostUSD += budget.USD(price.Cost(u.PromptTokens, u.CachedTokens, u.CompletionTokens))
		rec.CostModel = name
	}
}

// remember stores a finished turn's reasoning for an upstream that needs
// it back.
func (g *Gateway) remember(x *exchange, t *try, res wire.Result) {
	up := t.plan.upstream
	ctx := context.WithoutCancel(x.r.Context())
	if up.signatures {
		if err := policy.RememberSignatures(ctx, policy.Tenant(g.store, tenant(x.key)), res.Calls); err != nil {
			g.stateFailed(x, "reasoning_put", err)
		}
	}
	if !up.restore {
		return
	}
	turn := policy.Turn{Reasoning: res.Reasoning, Calls: res.Calls, Content: res.Text}
	if err := policy.RememberReasoning(ctx, policy.Tenant(g.store, tenant(x.key)), t.plan.upstream.carry, turn); err != nil {
		g.stateFailed(x, "reasoning_put", err)
	}
}

// outcomeOf names an attempt that ended the request, from what its relay
// recorded (stream and whole write their own failures).
func outcomeOf(rec *observe.Record) observe.AttemptOutcome {
	switch rec.Outcome {
	case observe.OutcomeOK:
		return observe.AttemptOK
	case observe.OutcomeViolation:
		return observe.AttemptViolation
	case observe.OutcomeClientGone:
		return observe.AttemptCanceled
	case observe.OutcomeUpstream:
		if a, ok := attemptOf[upstream.Kind(rec.ErrorKind)]; ok {
			return a
		}
	}
	return observe.AttemptIncomplete
}

func joinAnnotations(prev string, a []string) string {
	for _, s := range a {
		if prev != "" {
			prev += "; "
		}
		prev += s
	}
	return prev
}
