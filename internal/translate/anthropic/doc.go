// Package anthropic translates between the gateway and Anthropic's
// Messages API, both ways, as the Responses API's package does for its
// protocol:
//
//   - as a client API (POST /v1/messages and /v1/messages/count_tokens),
//     what Claude Code, the Anthropic SDKs and the Claude Agent SDK speak:
//     [Decode] reads a Messages request, [Request.Chat] turns it into the
//     chat completions request the gateway's one path prepares and sends —
//     repair, policy, budgets, reasoning, to an upstream of any protocol —
//     and [Stream] and [Whole] turn the normalized, judged answer back into
//     the Messages API's events and message;
//   - as an upstream (protocol: anthropic), the outbound translator of
//     docs/design.md: [UpstreamRequest] turns the prepared chat request
//     into a Messages request; [UpstreamStream] turns Messages stream
//     events into canonical chat.completion.chunk payloads, and
//     [UpstreamWhole] a whole message into a chat.completion, which then go
//     through the same normalizer, collector, judge and writer as every
//     other upstream's.
//
// The middle of the gateway knows neither which API the client spoke nor
// which protocol is at the end.
//
// # As a client API
//
// For an Anthropic upstream nothing is lost: each chat message keeps the
// blocks the client sent for it (translate.BlocksMember, by their index
// in Translated.Kept: views of the body, never copied) and the request
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
//
// # As an upstream
//
// What is translated, request side:
//
//   - system and developer messages → system (text blocks, their
//     cache_control kept); consecutive turns of one role merged; tool
//     replies → tool_result blocks in the user turn that follows the
//     tool_use turn (repair has paired them already); an empty user or
//     assistant turn without calls is dropped (Anthropic refuses them,
//     docs/quirks.md C12).
//   - content parts: text (cache_control kept), image_url (a data: URL →
//     a base64 image, else a url image); other parts (audio, files) are
//     refused with 400.
//   - tool_calls → tool_use blocks, their arguments parsed (a call whose
//     arguments are not a JSON object is refused with 400); the thinking
//     blocks remembered for the turn (restored by the gateway from the
//     reasoning store, signatures unchanged) go first.
//   - tools → name, description, input_schema; tool_choice auto, none,
//     required, a named function → auto, none, any, tool;
//     parallel_tool_calls: false → disable_parallel_tool_use.
//   - max_tokens (or max_completion_tokens, else the upstream's
//     default_max_tokens) always; stop → stop_sequences; temperature,
//     top_p, top_k passed on (temperature and top_k dropped while thinking,
//     which Anthropic refuses with them); user → metadata.user_id;
//     thinking (the route's reasoning level, written by the gateway as
//     thinking-budget) checked against Anthropic's bounds (C14: a budget of
//     at least 1024 and below max_tokens, else 400 naming both numbers).
//   - with thinking on, the last tool turn must start with its thinking
//     block: when it was not found, thinking is turned off for the request
//     (Anthropic would refuse it) and the request says so.
//   - n > 1, response_format, logprobs and audio are refused with 400;
//     other members of the chat request are not sent.
//   - a message that keeps the blocks a Messages API client sent for it
//     (translate.BlocksMember) is sent as those blocks while they say what
//     the message says (translate.BlocksSay; else translated as above),
//     and the client's tools and members (translate.RequestMember) are
//     sent as it declared them.
//
// For a Messages API client (translate.StreamOptions.Thoughts) the stream
// also hands on what the chat model has no slot for, in the gateway's own
// delta members: signatures, redacted thinking, other blocks (server
// tools' uses and results) whole when they stop, and citations.
//
// Response side: text, tool_use (one call per block, dense indexes, ids
// kept), thinking (to the reasoning field; text and signature kept for
// the store), redacted thinking (kept for the store, opaque), stop
// reasons (end_turn and stop_sequence → stop, tool_use → tool_calls,
// max_tokens and model_context_window_exceeded → length, refusal →
// content_filter, pause_turn → stop and reported), usage (cache reads in
// prompt_tokens_details.cached_tokens), ping (ignored), error events (an
// error object: the stream ends with the error event, no [DONE]).
package anthropic
