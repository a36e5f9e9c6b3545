package gateway

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// prepared is a request ready to send on one route: derived from the
// client's request by the route's plan, with what each step did.
type prepared struct {
	plan   *plan
	req    *wire.ChatRequest // what is sent (model aside)
	body   []byte
	path   string // the endpoint, for an upstream whose endpoint names the model
	judge  *policy.Judge
	limits budget.Limits // the route's and the key's, the stricter of each
	// clientUsage: the client asked for the usage chunk.
	clientUsage bool

	trimmed int
	// droppedEmpty counts empty turns an upstream of another protocol
	// would refuse, left out; placeholders the turns sent with the
	// upstream's placeholder for state the gateway does not have.
	droppedEmpty, placeholders int
	// droppedReasoning counts reasoning items the client sent back that
	// another upstream issued, left out.
	droppedReasoning int
	// translated: the request is an inbound translator's, with the
	// gateway's own members for an upstream of another protocol.
	translated bool
	// droppedCache counts cache_control marks the translation left out.
	droppedCache int
	// dropped names what else it left out (edgeChat.dropped).
	dropped []string
	report  repair.Report
	// outline: the console wants what repair did as an outline of the
	// transcript before and after (before, after; set when it changed it),
	// with the messages' text when content.
	outline, content bool
	before, after    []observe.Turn
	fixes            repair.ToolCallFixes
	restored         policy.Restored
	level            policy.Level
	// fitted: the route's thinking budget was lowered, or thinking turned
	// off, to fit the request's output limit.
	fitted policy.Fitted
}

// prepare derives the request to send on route p from the client's (as
// the route takes it, base): budgets (trimming before repair, so repair
// seals what trimming broke), request normalizations and repair, the
// completion policy's reading, the output limit, restored reasoning, the
// reasoning level, usage asked for. A refusal is returned, nothing sent.
func (g *Gateway) prepare(x *exchange, p *plan, base translation) (*prepared, error) {
	pr := &prepared{plan: p, req: base.req.Derive(), limits: p.limits, translated: base.keepOwn, droppedCache: base.droppedCache, dropped: base.dropped,
		outline: g.console != nil, content: g.console != nil && g.cfg.Console.Inspect == "content"}
	if x.key != nil {
		pr.limits = budget.Stricter(pr.limits, g.keyPlans[x.key.Name].limits)
	}
	if err := pr.transcript(); err != nil {
		return nil, err
	}
	// Chat's hosted web search, unless the route lets the upstream run it.
	if _, ok := pr.req.Get("web_search_options"); ok && !translate.HostedAllowed(base.shape.reach.hosted(), "web_search") {
		pr.req.Delete("web_search_options")
		pr.dropped = append(slices.Clip(pr.dropped), "tool:web_search_options")
	}
	var err error
	if pr.judge, err = policy.Prepare(pr.req, p.policy); err != nil {
		return nil, err
	}
	// The output limit is clamped before reasoning checks its budget
	// against it.
	budget.ClampOutput(pr.req, pr.limits.MaxOutputTokens, p.upstream.outputLimitField)
	if g.priced(x) {
		// What admission reserves for is what is sent: an upstream left
		// without a limit may write far more than the reservation counts.
		budget.EnsureOutput(pr.req, int(defaultOutput(p)), p.upstream.outputLimitField)
	}
	if err := g.reason(x, pr); err != nil {
		return nil, err
	}
	pr.clientUsage = pr.req.Stream && streamUsage(pr.req, p.upstream.noStreamOptions)
	if err := pr.encode(p.targetModel(x.req.Model), g.sealer(x.key)); err != nil {
		return nil, err
	}
	return pr, nil
}

// encode writes the body to send, in the upstream's protocol.
func (pr *prepared) encode(model string, sealer translate.Sealer) error {
	up := pr.plan.upstream
	if up.translator == nil {
		if pr.translated {
			pr.req.DropOwn() // what a client API's translator kept for another kind of upstream
		}
		var err error
		pr.body, err = pr.req.Encode(model)
		return err
	}
	r, err := up.translator.Request(pr.req, translate.Options{Model: model, DefaultMaxTokens: up.defaultMaxTokens, CarriedMember: carriedMember,
		UpstreamStore: pr.plan.upstreamStore, Upstream: up.name, Sealer: sealer, Vertex: up.vertex})
	if err != nil {
		return err
	}
	pr.body, pr.path, pr.droppedEmpty, pr.placeholders, pr.droppedReasoning = r.Body, r.Path, r.DroppedEmpty, r.Placeholders, r.DroppedReasoning
	if r.ThinkingOff {
		pr.level = policy.Off // the last tool turn's thinking was not found
	}
	return nil
}

// transcript trims the messages to the input budget, normalizes and
// repairs them.
func (pr *prepared) transcript() error {
	p, msgs := pr.plan, pr.req.Messages
	changed := false
	if pr.limits.MaxInputChars != budget.Unlimited {
		trimmed, rep, err := budget.Trim(msgs, pr.req.Kept, budget.RequestChars(pr.req), pr.limits.MaxInputChars, p.trim)
		if err != nil {
			return err
		}
		if rep.Removed > 0 {
			msgs, pr.trimmed, changed = trimmed, rep.Removed, true
		}
	}
	msgs, pr.fixes = repair.FixToolCalls(msgs, p.steps)
	if p.repair != repair.ModeOff {
		in := msgs
		if msgs, pr.report = repair.Repair(msgs); pr.outline && !pr.report.Empty() {
			pr.before, pr.after = outlineOf(in, pr.report, pr.content), outlineOf(msgs, pr.report, pr.content)
		}
	}
	if p.repair == repair.ModeReject && !pr.report.Empty() {
		return &repair.RejectError{Report: pr.report}
	}
	if p.upstream.maxIDLen > 0 {
		msgs, pr.fixes.ShortenedIDs = repair.ShortenIDs(msgs, p.upstream.maxIDLen)
	}
	if len(msgs) == 0 {
		return &wire.DecodeError{Kind: wire.KindMissing, Param: "messages", Offset: -1,
			Msg: "has no message left once the tool messages that answer no call are dropped; send the conversation that the tool messages belong to"}
	}
	if changed || pr.fixes.Any() || !pr.report.Empty() {
		pr.req.SetMessages(msgs)
	}
	return nil
}

// reason restores the reasoning the upstream needs back, then writes the
// route's reasoning level in the upstream's fields.
func (g *Gateway) reason(x *exchange, pr *prepared) error {
	p, up := pr.plan, pr.plan.upstream
	reasoning := p.reasoning
	if up.restore {
		pr.restored = policy.RestoreReasoning(x.r.Context(), pr.req.Messages, up.carry, policy.Tenant(g.store, tenant(x.key)))
		if pr.restored.Restored > 0 {
			pr.req.SetMessages(pr.restored.Messages)
		}
		if pr.restored.Err != nil {
			g.stateFailed(x, "reasoning_get", pr.restored.Err)
		}
		if pr.restored.Missed > 0 && p.offOnMiss {
			reasoning.Level, reasoning.ClientEffort = policy.Off, false
		}
	}
	if up.signatures {
		sigs := policy.RestoreSignatures(x.r.Context(), pr.req.Messages, policy.Tenant(g.store, tenant(x.key)))
		if sigs.Restored+sigs.Placeholders > 0 {
			pr.req.SetMessages(sigs.Messages)
		}
		if sigs.Err != nil {
			g.stateFailed(x, "reasoning_get", sigs.Err)
		}
		pr.restored.Restored += sigs.Restored
		pr.placeholders += sigs.Placeholders
	}
	var err error
	if pr.level, pr.fitted, err = policy.ApplyReasoning(pr.req, reasoning); err != nil {
		if re, ok := err.(*wire.ParamError); ok && pr.limits.MaxOutputTokens != budget.Unlimited {
			// The client cannot raise a limit its budget sets: say so.
			return &wire.ParamError{Param: re.Param, Msg: fmt.Sprintf("%s; note that this key's and route's budgets cap the output at %d tokens (max_output_tokens), whatever the request asks", re.Msg, pr.limits.MaxOutputTokens)}
		}
		return err
	}
	if up.refusesForced && pr.level > policy.Off && pr.judge.Forced() {
		// This upstream refuses a forced tool_choice while thinking.
		if p.offWhenForced {
			reasoning.Level, reasoning.ClientEffort = policy.Off, false
			pr.level, _, _ = policy.ApplyReasoning(pr.req, reasoning) // level off: no budget to check
		} else {
			pr.req.Set("tool_choice", json.RawMessage(`"auto"`)) // the judge still enforces the original
		}
	}
	return nil
}

// streamUsage reports whether a streamed request asked for usage
// (stream_options.include_usage), and makes sure the upstream is asked for
// it: the gateway counts tokens by key, and the usage chunk the client did
// not ask for is taken out of its stream. For an upstream that refuses
// stream_options the field is removed instead.
func streamUsage(req *wire.ChatRequest, noStreamOptions bool) bool {
	opts := wire.Object{}
	if raw, ok := req.Get("stream_options"); ok && string(raw) != "null" {
		if o, err := wire.ParseObject(raw); err == nil {
			opts = o
		}
	}
	v, _ := opts.Get("include_usage")
	asked := string(v) == "true"
	switch {
	case noStreamOptions:
		req.Delete("stream_options")
	case !asked:
		opts.Set("include_usage", json.RawMessage("true"))
		req.Set("stream_options", opts.JSON())
	}
	return asked
}

// notePrepared writes what preparing the request did into the record, and
// tells the client what repair and normalization changed (response
// headers).
func (g *Gateway) notePrepared(x *exchange, pr *prepared) {
	rec, p := x.rec, pr.plan
	rec.Trimmed = pr.trimmed
	rec.ReasoningRestored, rec.ReasoningMiss, rec.ReasoningPlaceholder = pr.restored.Restored, pr.restored.Missed, pr.placeholders
	rec.Reasoning = pr.level.String()
	rec.Repair, rec.Normalize, rec.Repairs = "", "", rec.Repairs[:0]
	h := x.w.Header()
	h.Del(RepairHeader)
	h.Del(NormalizeHeader)
	if !pr.report.Empty() {
		rec.Repair = pr.report.Header()
		h.Set(RepairHeader, rec.Repair)
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "sealed", N: len(pr.report.Sealed)},
			observe.Count{Name: "dropped", N: len(pr.report.Dropped)}, observe.Count{Name: "moved", N: len(pr.report.Moved)})
		if pr.outline {
			rec.RepairDetail = repairDetail(pr)
		}
	}
	if pr.droppedReasoning > 0 {
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "dropped_foreign_reasoning", N: pr.droppedReasoning})
	}
	if pr.droppedEmpty > 0 {
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "dropped_empty_turn", N: pr.droppedEmpty})
	}
	if pr.droppedCache > 0 {
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "dropped_cache_control", N: pr.droppedCache})
	}
	h.Del(ThinkingHeader)
	if f := pr.fitted; f.From > 0 {
		action := "thinking_lowered"
		if f.To == 0 {
			action = "thinking_off"
			h.Set(ThinkingHeader, fmt.Sprintf("off; budget_tokens=%d does not fit the output limit", f.From))
		} else {
			h.Set(ThinkingHeader, fmt.Sprintf("budget_tokens=%d; lowered from %d to fit the output limit", f.To, f.From))
		}
		rec.Repairs = append(rec.Repairs, observe.Count{Name: action, N: 1})
	}
	h.Del(DroppedHeader)
	if len(pr.dropped) > 0 {
		h.Set(DroppedHeader, strings.Join(pr.dropped, ", "))
		for _, d := range pr.dropped {
			kind, _, _ := strings.Cut(d, ":")
			rec.Repairs = append(rec.Repairs, observe.Count{Name: "dropped_" + strings.ReplaceAll(kind, "-", "_"), N: 1})
		}
	}
	if f := pr.fixes; f.Any() {
		rec.Normalize = f.Header()
		h.Set(NormalizeHeader, rec.Normalize)
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "arguments_to_string", N: f.StringifiedArguments},
			observe.Count{Name: "synthesized_id", N: f.SynthesizedIDs}, observe.Count{Name: "deduped_call_id", N: f.DedupedCallIDs},
			observe.Count{Name: "tool_call_content", N: f.ToolCallContent}, observe.Count{Name: "shortened_call_id", N: f.ShortenedIDs})
	}
	if p.upstream.simulated {
		h.Set(SimulatedHeader, "sim")
	} else if !g.simulated {
		h.Del(SimulatedHeader)
	}
}

// Response headers that report what the gateway did to the request.
const (
	// RepairHeader is set when transcript repair changed the request:
	// "sealed=N; dropped=N; moved=N".
	RepairHeader = "X-Toolgate-Repair"
	// NormalizeHeader is set when a request normalization changed it,
	// listing the non-zero counts, e.g. "synthesized_ids=1".
	NormalizeHeader = "X-Toolgate-Normalize"
	// DroppedHeader names what a translation to the upstream's protocol
	// left out because that protocol has no such thing and its absence
	// changes nothing the client relies on: "anthropic-beta:NAME" (a beta
	// only Anthropic honours), "tool:NAME" (a hosted tool the upstream
	// cannot run, or the route does not let it run: hosted_tools),
	// comma-separated.
	DroppedHeader = "X-Toolgate-Dropped"
	// ThinkingHeader is set when the route's thinking budget did not fit
	// the request's output limit: "budget_tokens=N; lowered from M …"
	// (half the limit), or "off; …" (half the limit is under Anthropic's
	// minimum of 1024).
	ThinkingHeader = "X-Toolgate-Thinking"
)

// outlineOf is the part of a transcript's outline around what repair
// did: each message within outlineContext of one that repair's actions
// name (by its index in the input, or a call id it makes or answers),
// with its position, role and call ids (at most maxOutlineIDs), never
// its content (unless content: then its text, clipped and redacted). A
// transcript of thousands of messages costs the console a few lines, not
// thousands.
func outlineOf(msgs []wire.Message, r repair.Report, content bool) []observe.Turn {
	ids := map[string]bool{}
	near := map[int]bool{}
	for _, rs := range [][]repair.Reply{r.Sealed, r.Dropped, r.Moved} {
		for _, a := range rs {
			ids[a.CallID] = true
			near[a.Index] = true
		}
	}
	keep := make([]bool, len(msgs))
	for i, m := range msgs {
		named := near[i] || ids[m.ToolCallID] && m.ToolCallID != ""
		for _, c := range m.ToolCalls {
			named = named || ids[c.ID]
		}
		for k := max(i-outlineContext, 0); named && k <= min(i+outlineContext, len(msgs)-1); k++ {
			keep[k] = true
		}
	}
	var out []observe.Turn
	for i, m := range msgs {
		if !keep[i] {
			continue
		}
		if len(out) == maxOutlineTurns {
			break // a transcript repaired in many places: its first ones
		}
		t := observe.Turn{Index: i, Role: m.Role}
		for _, c := range m.ToolCalls[:min(len(m.ToolCalls), maxOutlineIDs)] {
			t.IDs = append(t.IDs, c.ID)
		}
		if m.ToolCallID != "" {
			t.IDs = append(t.IDs, m.ToolCallID)
		}
		if content {
			t.Text = inspected(translate.ReplyText(m.Content))
		}
		out = append(out, t)
	}
	return out
}

// inspected is a message's text as the console may keep it: at most
// inspectRunes runes, with whatever looks like a key, a token or a secret
// (a bearer, sk-…, AKIA…, a long run of key-like characters) redacted.
func inspected(text string) string {
	if len(text) > 4*inspectRunes {
		text = text[:4*inspectRunes] // no rune is longer than 4 bytes
	}
	if r := []rune(text); len(r) > inspectRunes {
		text = string(r[:inspectRunes]) + "…"
	}
	return secretLike.ReplaceAllString(text, "[redacted]")
}

// inspectRunes is how much of a message's text the console keeps.
const inspectRunes = 300

// secretLike is what the console redacts from the text it keeps.
var secretLike = regexp.MustCompile(`(?i)bearer\s+\S+|\b(?:sk|pk|rk|ak)[-_][A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,}|[A-Za-z0-9+/_\-]{32,}={0,2}`)

// outlineContext is how many messages either side of one repair named
// the console's outline shows; maxOutlineIDs how many call ids of one
// message; maxOutlineTurns and maxOutlineActions how many messages and
// actions one request's outline holds at most, however many repair
// touched: what the console keeps of a request is bounded.
const (
	outlineContext    = 2
	maxOutlineIDs     = 16
	maxOutlineTurns   = 200
	maxOutlineActions = 100
)

// repairDetail is what repair did to the request, for the console.
func repairDetail(pr *prepared) *observe.RepairDetail {
	d := &observe.RepairDetail{Before: pr.before, After: pr.after}
	for _, a := range []struct {
		name    string
		replies []repair.Reply
	}{{"sealed", pr.report.Sealed}, {"dropped", pr.report.Dropped}, {"moved", pr.report.Moved}} {
		for _, r := range a.replies {
			if len(d.Actions) == maxOutlineActions {
				d.Omitted++
				continue
			}
			d.Actions = append(d.Actions, observe.RepairAction{Action: a.name, Index: r.Index, CallID: r.CallID})
		}
	}
	return d
}
