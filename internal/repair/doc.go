// Package repair puts a transcript's tool calls and replies back together
// before a request leaves the gateway (docs/spec.md §1), and holds the other request
// normalizations docs/spec.md §1 lists, each a separate, switchable step.
//
// [Repair] is the seed algorithm, exactly: pairing per request (the closest
// earlier unanswered call owns a reply, so `call_0` reused in every round is
// handled), a seal for every call nothing answered, orphan and duplicate
// replies dropped, misplaced replies moved back directly after their call.
// It is pure, deterministic and idempotent, and it passes every message it
// did not create on unchanged: the same wire.Message, whose Raw bytes go
// upstream as the client sent them. When the transcript is already paired it
// returns its input and allocates nothing.
//
// [FixToolCalls] runs these fixes of the history's tool calls before Repair, in this order, each only when its
// switch is on, each counted in [ToolCallFixes]:
//
//   - [StringifyArguments]: arguments sent as a JSON object become the
//     string of that object's bytes (docs/quirks.md C26).
//   - [SynthesizeIDs]: a call with an empty or missing id gets
//     "call_tg" + 16 hex digits of a SHA-256 over the SHA-256 of the
//     message's bytes and the call's position: deterministic, so every
//     replay of the same transcript gets the same id, and Repair then seals
//     the call (the message is hashed once, however many calls lack an id). With the step off,
//     the seed's behaviour stands: such a call is ignored.
//   - [DedupeCallIDs]: an id made twice in one message (docs/quirks.md C03, C11,
//     C23): an exact repeat (same name and arguments) is removed; a
//     different call is renamed "<id>_<k>" (the smallest k ≥ 2 not used in
//     the message), so Repair seals it unless it was answered.
//   - [ToolCallContent]: on assistant messages that carry tool_calls,
//     content "" becomes null (mode null) or null/absent becomes "" (mode
//     empty), for upstreams that refuse one or the other (docs/quirks.md C07).
//
// A message a step changes keeps every other field's bytes: only the member
// that changed is rewritten. Arguments are judged with a JSON validity check
// (json.Valid), never by decoding into Go values, so every JSON text — 1e999
// included — counts as parseable.
package repair
