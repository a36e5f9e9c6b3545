// Package budget holds docs/spec.md §5's task budgets: the presets, their
// resolution into Limits, and the pure admission steps that apply them to
// a request before it is sent (input size, output tokens), and the
// admission and spend that count against the counters (maxCalls
// sessions, client keys' rate limits and spend) in a state.Store: in
// memory, or in Redis when replicas share them (internal/state).
//
// Decisions recorded here:
//
//   - A route without a budget block is unbudgeted. A budget block is based
//     on its preset, medium when none is named (docs/spec.md §5).
//   - Precedence, low to high: preset, then the exact values of the budget
//     object. (No model-definition layer exists in the configuration yet.)
//   - Unlimited is -1 (Unlimited); a configured 0 stays 0.
//   - maxInputChars counts the characters (runes) of the transcript's text:
//     message contents (strings, or the text of content parts) and tool-call
//     arguments.
//   - Trimming removes whole turns, oldest first: a turn is a user message
//     and everything up to the next one. System (and developer) messages and
//     the latest user turn are kept; if the rest still does not fit, the
//     request is refused. Repair runs after trimming and seals what it broke.
//   - maxOutputTokens clamps max_completion_tokens or max_tokens (whichever
//     the request has, both if both), or injects the upstream's configured
//     field when the request has neither (docs/quirks.md C08: never both).
//   - Counters count in fixed windows that start with their first use
//     (not aligned to the clock), in memory and in Redis alike; a Redis
//     key's expiry is its window. One admission checks every counter and
//     adds to each only if all have room (all or nothing), so a request
//     refused by one limit costs nothing against the others.
//   - A counter checked with a cost of 0 (tokens per minute, whose cost is
//     known only when the response ends) admits while below its limit.
package budget
