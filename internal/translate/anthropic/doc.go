// Package anthropic translates between the chat completions wire the
// gateway speaks to its clients and Anthropic's Messages API, for an
// upstream with protocol: anthropic. It is the outbound translator of
// docs/design.md: [Request] turns the prepared chat request into a Messages
// request; [Stream] turns Messages stream events into canonical
// chat.completion.chunk payloads, and [Whole] a whole message into a
// chat.completion, which then go through the same normalizer, collector,
// judge and writer as every other upstream's. The middle of the gateway
// does not know which protocol is at the end.
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
