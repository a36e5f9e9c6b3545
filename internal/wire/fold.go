package wire

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// foldedNames finds, among an object's member names, two that differ
// only in case ("model" and "MODEL", or "stream" and "ſtream"): many
// upstream parsers match member names without regard to case (Go's
// encoding/json, for one) and would read either, so a gateway that checked
// one and forwarded both would let a client past its own checks. Names of
// lower-case ASCII, almost all of them, cost a lookup of the name itself;
// only others are folded. The zero value is empty.
type foldedNames struct {
	// others maps the folded form of each name that is not lower-case
	// ASCII to the name as sent.
	others map[string]string
}

// check returns a *DecodeError when name (at the level whose exact names
// are in seen, name included) folds to the same as another name there.
func (f *foldedNames) check(name string, seen *Names) error {
	if plain(name) {
		if other, ok := f.others[name]; ok {
			return caseError(other, name)
		}
		return nil
	}
	folded := fold(name)
	if folded != name && seen.Has(folded) {
		return caseError(name, folded)
	}
	if other, ok := f.others[folded]; ok && other != name {
		return caseError(other, name)
	}
	if f.others == nil {
		f.others = map[string]string{}
	}
	f.others[folded] = name
	return nil
}

// The member names the gateway reads or writes, by level: a member
// spelled as one of them in another case ("MAX_TOKENS", "Content",
// "max_output_tokenſ") is refused even alone, since an upstream that
// matches names without regard to case would read it as that member,
// beside (or instead of) the one the gateway checked or wrote.
var (
	// TopMembers are a request's top-level members, in any client API.
	TopMembers = []string{"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens",
		"max_output_tokens", "tools", "functions", "tool_choice", "function_call", "parallel_tool_calls", "reasoning_effort",
		"reasoning", "thinking", "temperature", "top_p", "top_k", "n", "user", "metadata", "response_format", "service_tier",
		"web_search_options", "store", "stop", "stop_sequences", "input", "instructions", "previous_response_id", "system",
		"include", "text", "output_config", "container", "mcp_servers", "context_management", "prediction", "background",
		"conversation", "prompt", "truncation", "safety_identifier", "prompt_cache_key", "verbosity", "modalities", "audio",
		"seed", "logprobs", "top_logprobs", "logit_bias", "frequency_penalty", "presence_penalty"}
	messageMembers  = []string{"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "reasoning_content", "reasoning", "refusal", "audio"}
	callMembers     = []string{"id", "type", "function", "index", "extra_content"}
	functionMembers = []string{"name", "arguments"}
	toolMembers     = []string{"type", "function"}
	toolFunction    = []string{"name", "description", "parameters", "strict"}
)

// CaseVariant refuses name, a member of the object at param, when it is
// one of known spelled in another case or as a Unicode fold of it (the
// members a client API's translator reads of a message or an item), as
// the chat decoder refuses one of its own.
func CaseVariant(name string, known []string, param string) error {
	return knownVariant(name, known, func() string { return param + "." + name })
}

// knownVariant refuses name when it is a member of known spelled in
// another case (see TopMembers); param names where.
func knownVariant(name string, known []string, param func() string) error {
	if plain(name) {
		return nil
	}
	f := fold(name)
	if f == name || !slices.Contains(known, f) {
		return nil
	}
	return &DecodeError{Kind: KindDuplicate, Param: Clip(param()), Offset: -1,
		Msg: fmt.Sprintf("the member %q is %q in another case; upstreams that match member names without regard to case would read it as %q: send it spelled %q", Clip(name), f, f, f)}
}

func caseError(a, b string) error {
	return &DecodeError{Kind: KindDuplicate, Param: Clip(b), Offset: -1,
		Msg: fmt.Sprintf("the members %q and %q differ only in case; upstreams that match member names without regard to case would read either: send one, spelled %q", Clip(a), Clip(b), Clip(fold(b)))}
}

// plain reports whether name holds no upper-case ASCII letter and no
// byte outside ASCII: its own folded form.
func plain(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// fold returns name with each rune replaced by the least rune of its
// Unicode simple case folding orbit, lower-case first for ASCII: two
// names are equal under strings.EqualFold exactly when their folds are.
func fold(name string) string {
	out := make([]rune, 0, len(name))
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		if 'A' <= least && least <= 'Z' {
			least += 'a' - 'A'
		}
		out = append(out, least)
	}
	return string(out)
}
