// Package bedrock translates between the chat completions wire the
// gateway works on and Amazon Bedrock's Converse API, for an upstream
// with protocol: bedrock (https://bedrock-runtime.REGION.amazonaws.com,
// signed with AWS Signature Version 4 — auth: aws — or a Bedrock API key
// as the bearer). [Request] turns the prepared chat request into a
// POST /model/{modelId}/converse (or /converse-stream) request, the model
// id or inference profile escaped as AWS's SDKs escape it ([Path]);
// [Stream] reads the answer's AWS event stream ([Stream.Frames]) and turns
// its events into canonical chat.completion.chunk payloads, and [Whole] a
// whole answer into a chat.completion, which then go through the same
// normalizer, collector, judge and writer as every other upstream's. The
// gateway speaks HTTP itself; aws-sdk-go-v2 is used only for the signature,
// the credentials and the event stream's codec.
//
// The request:
//
//   - system and developer messages → system text blocks;
//   - user and assistant turns → messages, consecutive turns of one role
//     merged, empty ones left out (Bedrock refuses them, docs/quirks.md
//     C12), blank text left out (Bedrock refuses a blank text block);
//     text parts, images (a base64 data: URL of a png, jpeg, gif or webp
//     image → an image block of its bytes; Bedrock fetches no URL), files
//     (a data: URL of a document format → a document block named after
//     the file); a part's cache_control → a cachePoint after its block;
//   - an assistant's tool_calls → toolUse blocks {toolUseId, name, input}
//     (arguments that are no JSON object are refused with 400), after the
//     reasoning blocks remembered for the turn (restored by the gateway
//     from the reasoning store, text, signature and redacted content
//     unchanged);
//   - tool replies → toolResult blocks in the user turn after the calls
//     (repair has paired them); a seal (docs/spec.md §1.4) → a result with
//     status error and the seal's sentence; a reply with no text →
//     "(no output)", as Bedrock refuses a blank one;
//   - tools → toolConfig.tools[].toolSpec {name, description,
//     inputSchema.json}; tool_choice auto / required / a function →
//     toolChoice auto / any / tool. The Converse API has no "none": it
//     sends no toolConfig, unless the transcript holds tool blocks (Bedrock
//     refuses those without one), when the tools go with the default
//     choice; a transcript with tool blocks and no tools declared gets a
//     tool of each name it calls. parallel_tool_calls has no counterpart;
//   - max_completion_tokens or max_tokens (else the upstream's
//     default_max_tokens) → inferenceConfig.maxTokens; temperature, top_p,
//     stop → temperature, topP, stopSequences; top_k and the route's
//     reasoning level (Claude's thinking, with its budget checked against
//     Claude's bounds: at least 1024 tokens, below maxTokens) →
//     additionalModelRequestFields; temperature, topP and top_k are left
//     out while thinking, which Claude refuses with them;
//   - with thinking on, the last tool turn must start with its reasoning
//     block: when it was not found, thinking is turned off for the request
//     and the request says so, as for protocol anthropic;
//   - n > 1, response_format, logprobs and audio are refused with 400;
//     other members of the chat request are not sent.
//
// The answer: messageStart → the role; contentBlockStart with a toolUse →
// a call (dense indexes, ids kept), its input deltas → its arguments;
// text deltas → content; reasoningContent deltas → reasoning_content, and
// the block (text and signature, or redacted content) kept for the store
// and, for a client whose API has a slot for it, handed on in the
// gateway's own delta members (translate.SignatureMember,
// translate.RedactedMember); messageStop → the finish reason (end_turn and
// stop_sequence → stop, tool_use → tool_calls, max_tokens and
// model_context_window_exceeded → length, guardrail_intervened and
// content_filtered → content_filter); metadata → the usage (cache reads
// and writes counted in prompt_tokens, reads in cached_tokens). An
// exception event (throttlingException, modelStreamErrorException, …) is
// an error chunk, with which the stream ends as an error; a stream that
// ends before messageStop is incomplete, never a clean finish.
package bedrock
