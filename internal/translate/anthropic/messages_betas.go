package anthropic

import "strings"

// betasElsewhere are the anthropic-beta values (by prefix) a route whose
// upstream speaks another protocol serves by leaving them out, with why
// their absence changes nothing the client relies on. Every other beta
// is refused there by name: the answer would be wrong without it (files,
// code execution, MCP servers, computer use, skills, structured outputs,
// server-side compaction, …). The list follows what Claude Code and
// Anthropic's SDKs send by default (docs/spec.md §8).
var betasElsewhere = []struct{ prefix, why string }{
	{"claude-code-", "labels the client"},
	{"interleaved-thinking-", "how Anthropic interleaves thinking with tool use"},
	{"fine-grained-tool-streaming-", "how Anthropic streams tool input"},
	{"token-efficient-tools-", "how Anthropic counts tool tokens"},
	{"prompt-caching-", "cache pricing (cache_control is left out, counted)"},
	{"extended-cache-ttl-", "cache pricing"},
	{"output-128k-", "Anthropic's output limit"},
	{"context-1m-", "Anthropic's context window"},
	{"context-management-", "housekeeping: clearing old tool results and thinking (context_management is left out)"},
	{"thinking-token-count-", "usage display"},
	{"thinking-display-updates-", "how thinking is displayed"},
	{"redact-thinking-", "how thinking is displayed"},
	{"advanced-tool-use-", "tool search: deferred tools are sent in full (defer_loading left out), a tool reference as text"},
	{"tool-search-tool-", "tool search, as advanced-tool-use"},
	{"tool-examples-", "tools' input_examples, hints only"},
	{"effort-", "output_config.effort (the route's reasoning settings decide)"},
	{"mid-conversation-tool-changes-", "tools that change between turns: other protocols take each request's tools as they are"},
	{"model-context-window-exceeded-", "the name of a stop reason"},
	{"fast-mode-", "Anthropic's speed tier"},
	{"oauth-", "the client's sign-in at Anthropic (the gateway's own key is used)"},
}

// BetaElsewhere reports whether a route to an upstream of another
// protocol serves beta by leaving it out (see betasElsewhere).
func BetaElsewhere(beta string) bool {
	for _, b := range betasElsewhere {
		if strings.HasPrefix(beta, b.prefix) {
			return true
		}
	}
	return false
}
