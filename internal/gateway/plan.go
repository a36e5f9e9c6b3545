package gateway

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/anthropic"
	"github.com/toolgate/toolgate/internal/translate/bedrock"
	"github.com/toolgate/toolgate/internal/translate/gemini"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// plan is one route resolved at load (and reload): every value its
// requests read, typed. The request path reads plans, never the config's
// strings. A plan is immutable once built, and shared by every request on
// its route.
type plan struct {
	// upstreamStore: a responses upstream keeps the responses;
	// upstreamPrevious: a previous_response_id is passed on to it.
	upstreamStore, upstreamPrevious bool
	// refuseHosted: a hosted tool the upstream cannot run is refused, not
	// left out (refuse_hosted_tools).
	refuseHosted bool
	// orgWide and hostedTools are what the route lets a request reach past
	// itself at the upstream (routes[].org_wide, routes[].hosted_tools),
	// before a key narrows them (exchange.reach).
	orgWide, hostedTools []string
	name                 string
	model                string // upstream_model; "" sends the client's
	upstream             *upstreamPlan

	repair repair.Mode
	steps  repair.ToolCallSteps
	policy policy.Config
	// buffer holds tool calls until the response is judged
	// (tool_calls: buffer, or validate_arguments: reject).
	buffer bool

	reasoning policy.Reasoning
	// reasoningOut is the member the client gets reasoning in.
	reasoningOut string
	// offOnMiss turns thinking off when reasoning to restore is missing
	// (reasoning.on_miss: disable_thinking).
	offOnMiss bool
	// offWhenForced turns thinking off, instead of sending tool_choice
	// "auto", on an upstream that refuses a forced tool_choice while
	// thinking (reasoning.forced_tool_choice: disable_thinking).
	offWhenForced bool

	limits budget.Limits
	trim   bool // on_input_over: trim

	retries int
	backoff backoff
	// deployments are the route's upstreams, the first this plan's own;
	// each has the route's plan resolved onto it. One for most routes.
	deployments []deployment
	// cooldown is how long a failing deployment is left out.
	cooldown time.Duration
	// sticky: a session stays on one deployment (the route remembers
	// reasoning, kept per upstream).
	sticky bool
	// fallbacks are tried in order when this route's attempts failed for
	// a reason of the upstream's; their own fallbacks are not followed.
	fallbacks []*plan
	// route is the route as configured: what the rest of /v1 it
	// forwards, by path and method.
	route *config.Route
}

// carriedMember is the member of an assistant message the state an
// upstream of another protocol needs back (Anthropic's thinking blocks,
// Gemini's thought signatures) is restored into: a JSON string, read by
// the translator, never sent.
const carriedMember = wire.OwnPrefix + "carried"

// translators are the upstream protocols other than chat completions.
var translators = map[translate.Protocol]translate.Outbound{
	translate.Anthropic: anthropic.Translator,
	translate.Gemini:    gemini.Translator,
	translate.Responses: responses.Translator,
	translate.Bedrock:   bedrock.Translator,
}

// readsMessages reports an upstream whose translator writes its body
// from the decoded messages (every protocol but chat completions, whose
// body is the chat messages' bytes): a client API's translation then
// names its long strings rather than copy them (translate.ChatWriter).
func (u *upstreamPlan) readsMessages() bool { return u.translator != nil }

// setupOf is what every request to upstream u carries, as its protocol
// says (translate.Outbound.Setup; chat completions: the configured
// headers).
func setupOf(u config.Upstream) translate.Setup {
	c := translate.UpstreamConfig{Headers: u.Headers, Version: u.AnthropicVersion, DefaultMaxTokens: u.DefaultMaxTokens, Vertex: u.Vertex()}
	if tr := translators[u.Protocol.Value]; tr != nil {
		return tr.Setup(c)
	}
	return translate.Setup{Headers: c.Headers}
}

// upstreamPlan is one upstream resolved at load.
type upstreamPlan struct {
	name     string
	protocol translate.Protocol
	// translator translates requests and answers for an upstream of
	// another protocol; nil for chat completions.
	translator translate.Outbound
	// defaultMaxTokens is the output limit sent when nothing sets one,
	// for a protocol that requires one (Anthropic's max_tokens; 0: none).
	defaultMaxTokens int
	// vertex: a publisher's models on Google Vertex AI (config's Vertex).
	vertex bool
	client *upstream.Client
	quirks wire.Quirks
	// reasoning is where the upstream puts reasoning; field, the member it
	// takes it back in ("" for inline think tags: nothing to restore).
	reasoning wire.ReasoningSource
	field     string
	restore   bool // remember reasoning and put it back (restore_reasoning)
	// carry is how the state it needs back is kept and restored.
	carry policy.Carry
	// signatures: the calls' extra_content (Gemini's OpenAI-compatible
	// dialect signs calls there) is remembered and put back
	// (thought_signatures).
	signatures bool

	refusesForced    bool
	noStreamOptions  bool
	outputLimitField string
	toolCallContent  repair.ContentMode
	maxIDLen         int // ids longer are shortened (C04); 0: no limit
	maxResponse      int64
	maxEvent         int
	readIdle         time.Duration
	simulated        bool
	inFlight         prometheus.Gauge // toolgate_upstream_in_flight{upstream}
}

// backoff is a route's retry waits.
type backoff struct {
	base, max time.Duration
}

// plans resolves every route of cfg (validated already) onto its upstream
// client, fallbacks included.
func plans(cfg *config.Config, clients map[string]*upstream.Client, schemas *policy.Schemas, metrics *observe.Metrics) map[string]*plan {
	ups := map[string]*upstreamPlan{}
	healths := map[string]*health{}
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		ups[u.Name] = resolveUpstream(u, clients[u.Name])
		ups[u.Name].inFlight = metrics.UpstreamInFlight(u.Name)
		healths[u.Name] = &health{}
	}
	out := make(map[string]*plan, len(cfg.Routes))
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		var p *plan
		for k, d := range r.Upstreams {
			dp := resolveRoute(r, ups[d.Name], cfg.Server.MaxTools, schemas)
			if k == 0 {
				p = dp
				p.route = r
			}
			p.deployments = append(p.deployments, deployment{plan: dp, weight: *d.Weight, health: healths[d.Name]})
			p.sticky = p.sticky || dp.upstream.restore || dp.upstream.signatures
		}
		out[r.Name] = p
	}
	for i := range cfg.Routes {
		p := out[cfg.Routes[i].Name]
		for _, f := range cfg.Routes[i].Fallbacks {
			p.fallbacks = append(p.fallbacks, out[f])
		}
	}
	return out
}

func resolveUpstream(u *config.Upstream, c *upstream.Client) *upstreamPlan {
	p := &upstreamPlan{
		name: u.Name, client: c, quirks: u.Normalizations, protocol: u.Protocol.Value,
		restore: u.RestoreReasoning && u.ReasoningField.Value != wire.ReasoningThink, refusesForced: u.RefusesForcedToolChoice,
		noStreamOptions: u.NoStreamOptions, outputLimitField: u.OutputLimitField.Value.String(), maxIDLen: u.MaxToolCallIDLen,
		maxResponse: u.MaxResponseBytes, toolCallContent: u.ToolCallContent.Value,
		maxEvent: u.MaxEventBytes, readIdle: u.ReadIdleTimeout, simulated: u.Simulator,
	}
	if p.translator = translators[p.protocol]; p.translator != nil {
		// Reasoning comes back through the translator as
		// reasoning_content; what the upstream needs back (Anthropic's
		// signed thinking blocks, Gemini's thought signatures) is
		// remembered and restored into the gateway's own member, which the
		// translator reads. Anthropic refuses a forced tool_choice while
		// thinking.
		p.defaultMaxTokens = setupOf(*u).MaxTokens
		p.vertex = u.Vertex()
		p.reasoning, p.field, p.restore = wire.ReasoningContent, carriedMember, true
		p.refusesForced = p.protocol == translate.Anthropic
		p.carry = policy.Carry{Space: p.protocol.String() + ":", Field: carriedMember}
		if p.protocol == translate.Responses {
			// Encrypted reasoning is valid only for the organization that
			// made it: each deployment has its own key space, and a
			// conversation moved to another finds nothing to send back.
			p.carry.Space += u.Name + ":"
		}
		return p
	}
	p.reasoning = u.ReasoningField.Value
	if p.reasoning != wire.ReasoningThink {
		p.field = p.reasoning.String() // reasoning_content or reasoning
	}
	p.carry = policy.Carry{Field: p.field}
	p.signatures = u.Normalizations.ThoughtSignatures
	return p
}

func resolveRoute(r *config.Route, up *upstreamPlan, maxTools int, schemas *policy.Schemas) *plan {
	p := &plan{name: r.Name, model: r.UpstreamModel, upstream: up, repair: r.Repair.Value,
		retries: r.Retries, backoff: backoff{base: r.RetryBackoff, max: r.RetryMaxWait}, cooldown: r.Cooldown}
	p.steps = repair.ToolCallSteps{
		StringifyArguments: *r.Normalize.ArgumentsToString,
		SynthesizeIDs:      *r.Normalize.SynthesizeIDs,
		DedupeCallIDs:      *r.Normalize.DedupeCallIDs,
		ToolCallContent:    up.toolCallContent,
	}
	args := r.ValidateArguments.Value
	p.policy = policy.Config{Mode: r.Policy.Value, EnforceParallel: r.EnforceParallelToolCalls, Arguments: args, Schemas: schemas, MaxTools: maxTools}
	p.buffer = r.ToolCalls.Value == policy.DeliverBuffer || args == policy.ArgumentsReject
	p.reasoning = resolveReasoning(&r.Reasoning)
	p.reasoning.Format = r.Reasoning.FormatOn(up.protocol)
	p.reasoningOut = r.Reasoning.Output.Value.String()
	p.offOnMiss = r.Reasoning.OnMiss.Value == policy.MissDisableThinking
	p.offWhenForced = r.Reasoning.ForcedToolChoice.Value == policy.ForcedDisableThinking
	p.limits = r.Budget.Limits()
	p.upstreamStore = r.UpstreamStore
	p.upstreamPrevious = r.UpstreamStore && r.UpstreamPrevious
	p.refuseHosted = r.RefuseHostedTools
	p.orgWide, p.hostedTools = r.OrgWide, r.HostedTools
	p.trim = r.Budget != nil && r.Budget.OnInputOver.Value == budget.InputTrim
	return p
}

// resolveReasoning turns a route's reasoning config into the policy's
// form, encoding configured values as JSON once, fields in name order.
func resolveReasoning(c *config.Reasoning) policy.Reasoning {
	encode := func(m map[string]any) []policy.Field {
		var out []policy.Field
		for _, k := range slices.Sorted(maps.Keys(m)) {
			b, _ := json.Marshal(m[k]) // YAML-decoded values always marshal
			out = append(out, policy.Field{Name: k, Value: b})
		}
		return out
	}
	r := policy.Reasoning{ClientEffort: c.ClientEffort, Fields: encode(c.Fields), Format: c.Format.Value, Level: c.Level.Value}
	for l, n := range c.LevelBudgets {
		r.Budgets[l] = n
	}
	for l, fields := range c.LevelCustom {
		r.Custom[l] = encode(fields)
	}
	return r
}

// keyPlan is a client key's budget resolved at load: its limits (applied
// with the route's, the stricter winning) and its spend limit.
type keyPlan struct {
	limits budget.Limits
	spend  budget.Spend // Max 0: none
}

func resolveKey(b *config.Budget) keyPlan {
	k := keyPlan{limits: b.Limits()}
	if b != nil && b.MaxCostUSD > 0 {
		k.spend.Max = budget.Nano(b.MaxCostUSD)
		k.spend.Period = b.CostWindow.Value
	}
	return k
}

// reasoningMember is the member of the route's normalized answer that
// holds reasoning (routes[].reasoning.output; reasoning_content when
// unset), which a client API's translation reads it from.
func (p *plan) reasoningMember() string { return cmp.Or(p.reasoningOut, "reasoning_content") }

// targetModel is the model name sent upstream for a client's.
func (p *plan) targetModel(client string) string {
	if p.model != "" {
		return p.model
	}
	return client
}

// normalizer returns the options of a Normalizer for one response of a
// prepared request.
func (p *plan) normalizer(pr *prepared) wire.Options {
	return wire.Options{
		Upstream:     p.upstream.name,
		Quirks:       p.upstream.quirks,
		ReasoningIn:  p.upstream.reasoning,
		ReasoningOut: p.reasoningOut,
		Buffer:       p.buffer,
		KeepText:     pr.judge.NeedsText() || p.upstream.restore,
		LimitText:    pr.limits.MaxOutputChars != budget.Unlimited,
		TextLimit:    pr.limits.MaxOutputChars,
		SingleChoice: pr.judge.SingleChoice(),
		ClientUsage:  pr.clientUsage,
	}
}

// scrubbed is an error the upstream reported in its answer with the
// upstream's key, wherever its message echoes it, replaced by
// "[redacted]": the message reaches the client and the log.
func (u *upstreamPlan) scrubbed(ie *wire.IncompleteError) *wire.IncompleteError {
	if u.client == nil {
		return ie
	}
	if msg := u.client.Scrub(ie.Message); msg != ie.Message {
		c := *ie
		c.Message = msg
		return &c
	}
	return ie
}
