// Package responses translates OpenAI's Responses API both ways: for an
// upstream with protocol: responses, [UpstreamRequest], [UpstreamStream]
// and [UpstreamWhole] (its [Translator]) turn the path's chat request into
// a Responses request and the answer back — see upstream.go — and, as a
// client API, it is the inbound translator for the Responses API
// (POST /v1/responses): [Decode] reads a Responses request, [Request.Translate]
// turns it into the chat completions request the gateway's one path
// prepares and sends (repair, policy, budgets, reasoning, to an openai or
// an anthropic upstream alike), and [Stream] and [Whole] turn the
// normalized, judged chat completion answer back into Responses events
// and objects. The middle of the gateway does not know which API the
// client spoke.
//
// Request, translated: input as a string or as items — message (roles
// user, system, developer, assistant; parts input_text, input_image by URL,
// output_text, refusal), function_call, function_call_output, reasoning
// (its summary text becomes the turn's reasoning_content) —,
// instructions, function tools, tool_choice, parallel_tool_calls,
// max_output_tokens, reasoning.effort (→ reasoning_effort, which the
// route's reasoning mapping reads), text.format (json_schema and
// json_object → response_format, which the completion policy checks),
// temperature, top_p, metadata, user. Consecutive function_call items
// (and the assistant message before them) make one assistant turn; repair
// then pairs function_call_output with function_call by call_id (docs/spec.md §1)
// and seals an unanswered call with a failed function_call_output.
//
// Refused with 400, naming the parameter: tools other than functions
// (web_search, file_search, computer_use, code_interpreter, mcp,
// image_generation, custom, …), items of other types (item_reference
// included), input_file and file_id images, background, conversation and
// prompt templates.
//
// Response: output items reasoning (summary text), message (output_text)
// and function_call (call_id, name, arguments); status completed, or
// incomplete with incomplete_details.reason max_output_tokens or
// content_filter, or failed with the error; usage as input_tokens,
// output_tokens and their details. Streamed: response.created,
// response.in_progress, then per item output_item.added, its
// content_part or reasoning_summary_part, its deltas, its .done events and
// output_item.done, then response.completed or response.incomplete — or,
// once anything was sent, response.failed with the error: a cut upstream
// never ends in response.completed. Every event carries a
// sequence_number.
//
// From a Responses upstream, the answer's reasoning items reach a
// Responses client as the upstream sent them — its ids, summary and
// encrypted_content, sealed for that upstream (seal.go) — and its
// function calls with the upstream's item ids; the upstream's translator
// hands them on in the gateway's own delta members (translate.StreamOptions).
// Sent back, they go to the upstream that issued them as it issued them,
// in the gateway's carried member (ChatOptions.CarriedMember); to another
// upstream, not at all.
//
// Item for item, for a Responses upstream (ChatOptions.Keep): each chat
// message keeps the items the client sent for it (translate.ItemsMember,
// by their index in the conversation's items, never copied)
// and the request the client's tools and untranslated members
// (translate.ResponsesRequestMember); items, parts and tools the chat model has no
// slot for are carried, not refused. The upstream's translator sends the
// kept items as they were while the turn says what they say (itemsSay),
// and hands the answer's items on with the upstream's ids (a message's id
// when it starts, hosted tools' calls and annotated messages whole when
// they are done).
package responses
