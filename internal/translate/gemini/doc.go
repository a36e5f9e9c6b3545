// Package gemini translates between the chat completions wire the gateway
// speaks to its clients and Google's Gemini API, for an upstream with
// protocol: gemini (https://generativelanguage.googleapis.com/v1beta; the
// key goes in x-goog-api-key). [Request] turns the prepared chat request
// into a generateContent (or streamGenerateContent?alt=sse) request;
// [Stream] turns the answer's events into canonical chat.completion.chunk
// payloads and [Whole] a whole answer into a chat.completion, which then
// go through the same normalizer, collector, judge and writer as every
// other upstream's.
//
// The request:
//
//   - system and developer messages → systemInstruction;
//   - user and assistant turns → contents with roles user and model,
//     consecutive turns of one role merged, empty ones left out; text
//     parts, images as inlineData (a data: URL; Gemini fetches no URL);
//   - an assistant's tool_calls → functionCall parts {id, name, args};
//     tool replies → functionResponse parts {id, name, response} of one
//     user turn, in call order (repair has paired them), the response the
//     reply when it is a JSON object, else {"result": …};
//   - tools → one functionDeclarations tool, each schema mapped onto the
//     subset Gemini takes ([Schema]; what cannot be mapped is a 400 naming
//     the keyword); tool_choice auto / none / required / a function →
//     functionCallingConfig AUTO / NONE / ANY / ANY with
//     allowedFunctionNames; parallel_tool_calls has no counterpart;
//   - max_completion_tokens or max_tokens → maxOutputTokens; temperature,
//     top_p, seed, presence and frequency penalties, stop →
//     generationConfig; response_format json_schema → responseMimeType
//     application/json and responseJsonSchema, json_object → the MIME type;
//   - the reasoning level, as the route's format writes it:
//     reasoning_effort none / minimal / low / medium / high →
//     thinkingConfig.thinkingLevel minimal / minimal / low / medium / high
//     (Gemini 3); a thinking member with budget_tokens → thinkingBudget
//     (Gemini 2.5; disabled is 0); includeThoughts whenever thinking is
//     on, the thoughts reaching the client as its reasoning;
//   - n > 1, logprobs and audio are refused with 400, nothing sent.
//
// The answer: text parts → content, thought parts → reasoning, each
// functionCall → one complete tool call (Gemini's id, or "call_" and 24
// letters and digits derived from the response's id, counted as
// missing_id), finishReason STOP → stop (tool_calls when calls were made),
// MAX_TOKENS → length, SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT,
// SPII, IMAGE_SAFETY, LANGUAGE → content_filter, MALFORMED_FUNCTION_CALL,
// UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS → an upstream error, never a
// silent stop; usageMetadata → usage (thoughts in completion_tokens and
// completion_tokens_details.reasoning_tokens, cached content in
// prompt_tokens_details.cached_tokens); an error object → the error event.
// Gemini's stream has no end marker: it is complete when the body ends
// after a finishReason, cut otherwise.
//
// Thought signatures. Gemini signs its reasoning and wants the signature
// back on the part it came on: in the current turn, the first
// functionCall of each step must carry its signature, or the request is
// refused ("Function call is missing a thought_signature in functionCall
// parts"). Most clients rebuild assistant messages from the parsed call
// and drop unknown members, so the gateway keeps them: [Stream.Carried]
// and Whole's Carried are the answer's signatures ([Signatures]: the
// text's, and each call's by id), which the gateway remembers under the
// turn's call ids (per client key) and restores into the assistant
// message's own member (translate.Options.CarriedMember) when the client
// replays the turn. Each call's signature also reaches the client where
// Gemini's OpenAI-compatible endpoint puts it
// (extra_content.google.thought_signature); a client that keeps it sends
// it back, and that one wins. A model turn whose first call has no
// signature at all — from another model, made up by the client, no
// longer remembered — gets [SkipSignature], which Gemini documents for
// this case, counted as a placeholder, so the request is accepted rather
// than refused.
package gemini
