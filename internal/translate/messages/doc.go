// Package messages is the inbound translator for Anthropic's Messages API
// (POST /v1/messages and /v1/messages/count_tokens), what Claude Code, the
// Anthropic SDKs and the Claude Agent SDK speak: [Decode] reads a Messages
// request, [Request.Chat] turns it into the chat completions request the
// gateway's one path prepares and sends — repair, policy, budgets,
// reasoning, to an upstream of any protocol — and [Stream] and [Whole]
// turn the normalized, judged answer back into the Messages API's events
// and message. The middle of the gateway does not know which API the
// client spoke.
//
// For an Anthropic upstream nothing is lost: each chat message keeps the
// blocks the client sent for it (translate.BlocksMember) and the request
// the client's tools and the members the chat model lacks
// (translate.RequestMember); the Anthropic translator sends those blocks
// as they were while the message still says what they say, and blocks
// the chat model has no slot for (documents, server tool blocks) are
// carried, not refused.
//
// Request, translated:
//
//   - system (a string or text blocks, cache_control kept) → a system
//     message;
//   - user messages: text and image blocks (base64 → a data: URL, url) →
//     a user message; tool_result blocks → tool messages placed before
//     it, in order (an is_error result's text starts with "Error: ") —
//     so a tool_result that came after text is put first, as Anthropic
//     requires;
//   - assistant messages: text → content, tool_use → tool_calls (input as
//     the arguments), thinking → for an Anthropic upstream the signed
//     blocks (and redacted ones) in the gateway's own member, which its
//     translator sends back byte for byte (an unsigned block is left to
//     the gateway's store, which restores the signed one); for another
//     protocol the thinking text in the upstream's reasoning field;
//   - tools (client tools: name, description, input_schema) → function
//     tools; a server tool (web_search_…, bash_…, code_execution_…) is
//     refused with 400 naming its type on a route to another protocol:
//     the gateway runs none;
//   - tool_choice auto / any / tool / none → auto / required / the
//     function (which must be among the tools) / none;
//     disable_parallel_tool_use → parallel_tool_calls false;
//   - max_tokens, stop_sequences (stop), temperature, top_p;
//     metadata.user_id → user; top_k and thinking as they are for an
//     Anthropic upstream, else top_k left out and thinking as a
//     reasoning_effort (budget under 2048 low, under 8192 medium, else
//     high; disabled none); cache_control left out for another protocol
//     and counted (repairs action dropped_cache_control).
//
// The answer: message_start and a ping, then one block per run of
// reasoning (a thinking block), text, or each tool call (a tool_use block
// opened only with the call's id and name, its arguments as
// input_json_delta; a call that starts while another call's block is
// open — parallel calls interleaved, docs/quirks.md A43 — goes whole,
// right after that block), then message_delta with the stop reason (tool_calls
// → tool_use, length → max_tokens, stop → end_turn, content_filter →
// refusal) and the usage (input_tokens without the cached ones,
// cache_read_input_tokens, output_tokens), and message_stop. A failure
// after the start is one error event and no message_stop; before it, an
// error in Anthropic's shape with the status its SDKs map to their typed
// errors (an overloaded upstream is 529). From an Anthropic upstream,
// thinking blocks reach the client with their signatures (signature_delta,
// handed on by the upstream's translator in the delta member
// translate.SignatureMember, which ends the block) and redacted ones whole
// (translate.RedactedMember); a whole message gets the signed blocks from
// Meta.Thoughts. A client that keeps them sends them back as they are; one
// that drops them gets the gateway's remembered blocks.
package messages
