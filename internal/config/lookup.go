package config

import (
	"net/http"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/translate"
)

// MayUse reports whether the key may use some model of a route's model
// name or pattern: its list allows the route's name, or a pattern of one
// matches the other's text (a key's "gpt-*" may use the route "*").
func (k *Key) MayUse(routeModel string) bool {
	if k.Allows(routeModel) {
		return true
	}
	for _, p := range k.Models {
		if GlobMatch(routeModel, p) {
			return true
		}
	}
	return false
}

// Allows reports whether the key may use model.
func (k *Key) Allows(model string) bool {
	if len(k.Models) == 0 {
		return true
	}
	for _, p := range k.Models {
		if GlobMatch(p, model) {
			return true
		}
	}
	return false
}

// allows reports whether the rule matches path, and then whether it
// forwards method.
func (r PathRule) allows(method, path string) (matches, methodOK bool) {
	if !GlobMatch(r.Path, path) {
		return false, false
	}
	methods := r.Methods
	if len(methods) == 0 {
		methods = DefaultPathMethods
	}
	return true, slices.Contains(methods, method)
}

// defaultPassthrough are the paths every openai route forwards.
var defaultPassthrough = []PathRule{
	{Path: "/v1/embeddings", Methods: []string{http.MethodPost}},
	{Path: "/v1/completions", Methods: []string{http.MethodPost}},
	{Path: "/v1/moderations", Methods: []string{http.MethodPost}},
}

// MatchPath returns the first route whose paths serve path, for a
// request whose body names no model.
func (c *Config) MatchPath(path string) (*Route, bool) {
	for i := range c.Routes {
		for _, pat := range c.Routes[i].Paths {
			if GlobMatch(pat.Path, path) {
				return &c.Routes[i], true
			}
		}
	}
	return nil, false
}

// MethodsFor lists the methods the route's rules that match path
// forward on it, for a 405's Allow header.
func (r *Route) MethodsFor(path string) []string {
	var out []string
	for _, rules := range [][]PathRule{defaultPassthrough, r.Passthrough.Paths, r.Paths} {
		for _, rule := range rules {
			if GlobMatch(rule.Path, path) {
				methods := rule.Methods
				if len(methods) == 0 {
					methods = DefaultPathMethods
				}
				for _, m := range methods {
					if !slices.Contains(out, m) {
						out = append(out, m)
					}
				}
			}
		}
	}
	if r.Passthrough.All && !storedObjectPath(path) {
		for _, m := range DefaultPathMethods {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Forwarding is what a route does with a /v1 path outside its own API.
type Forwarding uint8

const (
	NotForwarded     Forwarding = iota // no rule of the route matches the path
	Forwarded                          // a rule matches and forwards the method
	MethodNotAllowed                   // rules match, none forwards the method
)

// Forwards says whether the route forwards method on path (a normalized
// path, with no dot segment): a rule of its passthrough (every path with
// passthrough: true, and the default paths) or of its paths must match
// the path and allow the method. Paths only add the paths they list; they
// never widen what a route forwards beyond them.
func (r *Route) Forwards(method, path string) Forwarding {
	out := NotForwarded
	check := func(rules []PathRule) bool {
		for _, rule := range rules {
			matches, ok := rule.allows(method, path)
			if ok {
				out = Forwarded
				return true
			}
			if matches {
				out = MethodNotAllowed
			}
		}
		return false
	}
	all := []PathRule(nil)
	if r.Passthrough.All && !storedObjectPath(path) {
		all = []PathRule{{Path: "/v1/*"}}
	}
	for _, rules := range [][]PathRule{defaultPassthrough, r.Passthrough.Paths, r.Paths, all} {
		if check(rules) {
			break
		}
	}
	return out
}

// storedObjects are the /v1 paths of objects an upstream keeps for its
// whole organization — files, vector stores, batches, stored chat
// completions, conversations, containers, fine-tuning jobs, assistants
// and threads, evals, uploads — which every client key of a route would
// share through the gateway's upstream key. passthrough: true does not
// forward them; only a rule of the route naming them (passthrough or
// paths) does.
var storedObjects = []string{"/v1/files", "/v1/uploads", "/v1/vector_stores", "/v1/batches", "/v1/chat/completions",
	"/v1/conversations", "/v1/containers", "/v1/fine_tuning", "/v1/assistants", "/v1/threads", "/v1/evals",
	"/v1/responses", "/v1/messages", "/v1/organization", "/v1/projects"}

// storedObjectPath reports whether path is, or is under, one of
// storedObjects.
func storedObjectPath(path string) bool {
	for _, p := range storedObjects {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// Has reports whether the normalization name is switched on.
func (q Quirks) Has(name string) bool {
	for _, v := range q {
		if v == name || v == "all" {
			return true
		}
	}
	return false
}

// IsPattern reports whether the route's model contains a wildcard.
func (r *Route) IsPattern() bool { return strings.Contains(r.Model, "*") }

// TargetModel returns the model name to send upstream for a client's model.
func (r *Route) TargetModel(clientModel string) string {
	if r.UpstreamModel != "" {
		return r.UpstreamModel
	}
	return clientModel
}

// Match returns the route for a client's model name: an exact route first,
// then the first pattern route that matches, in file order. (The gateway
// matches with what it builds at load; this reads the file's order.)
func (c *Config) Match(model string) (*Route, bool) {
	for i := range c.Routes {
		if r := &c.Routes[i]; !r.IsPattern() && r.Model == model {
			return r, true
		}
	}
	for i := range c.Routes {
		if r := &c.Routes[i]; r.IsPattern() && GlobMatch(r.Model, model) {
			return r, true
		}
	}
	return nil, false
}

// Route returns the route named name.
func (c *Config) Route(name string) (*Route, bool) {
	for i := range c.Routes {
		if c.Routes[i].Name == name {
			return &c.Routes[i], true
		}
	}
	return nil, false
}

// Upstream returns the upstream with the given name.
func (c *Config) Upstream(name string) (*Upstream, bool) {
	for i := range c.Upstreams {
		if c.Upstreams[i].Name == name {
			return &c.Upstreams[i], true
		}
	}
	return nil, false
}

// GlobMatch reports whether s matches pattern, where * matches any run of
// characters (including none) and every other character matches itself.
func GlobMatch(pattern, s string) bool {
	star, next := -1, 0 // last star position in pattern, and s index it resumed at
	p, i := 0, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, next = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			next++
			p, i = star+1, next
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Limits resolves a budget block: its preset, then its exact values; no
// block (nil) is no limits.
func (b *Budget) Limits() budget.Limits {
	if b == nil {
		return budget.NoLimits()
	}
	val := func(l *Limit) *int {
		if l == nil {
			return nil
		}
		n := int(*l)
		return &n
	}
	return budget.Resolve(budget.Object{Preset: b.Preset.Value, MaxCalls: val(b.MaxCalls), MaxInputChars: val(b.MaxInputChars),
		MaxOutputChars: val(b.MaxOutputChars), MaxOutputTokens: val(b.MaxOutputTokens), CallTimeoutMs: val(b.CallTimeoutMs)})
}

// FormatOn is the reasoning format a route writes on an upstream of
// protocol: its own, except that an anthropic upstream takes any format
// as Anthropic's own, thinking with budget_tokens (so does a bedrock
// upstream, as Claude's in additionalModelRequestFields), and a gemini upstream
// any but thinking-budget (its thinkingBudget) as reasoning-effort (its
// thinkingLevel).
func (r *Reasoning) FormatOn(protocol translate.Protocol) policy.Format {
	switch {
	case r.Format.Value == policy.FormatNone:
	case protocol == translate.Anthropic || protocol == translate.Bedrock:
		return policy.FormatBudget
	case protocol == translate.Gemini && r.Format.Value != policy.FormatBudget:
		return policy.FormatEffort // thinkingLevel; thinking-budget is thinkingBudget
	}
	return r.Format.Value
}

// ThinkingBudget is the thinking budget a route sends at its own level on
// an upstream of protocol (0: none).
func (r *Reasoning) ThinkingBudget(protocol translate.Protocol) int {
	pr := policy.Reasoning{Format: r.FormatOn(protocol), Level: r.Level.Value}
	for l, n := range r.LevelBudgets {
		pr.Budgets[l] = n
	}
	return pr.Budget(pr.Level)
}
