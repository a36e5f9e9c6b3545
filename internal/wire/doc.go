// Package wire is toolgate's vocabulary for the OpenAI chat-completions wire:
// the request and message types, the SSE event reader and writer, the one
// normalizer of upstream answers, and the error body every client sees.
//
// It sits at both ends of the pipeline (docs/design.md): [DecodeRequest] turns the
// client's bytes into a [ChatRequest] and [ChatRequest.Encode] turns it back
// into the body sent upstream; [Events] reads the upstream's stream and
// [Writer] writes the client's.
//
// # Faithful decoding
//
// A gateway that decodes into fixed structs silently drops every field it
// does not know (response_format, logprobs, cache_control, a vendor's
// extensions). ChatRequest keeps every top-level member as its original bytes,
// in order, and each [Message] keeps its original bytes too, so that an
// unchanged request re-encodes to the same members with the same values. Only
// the fields the gateway acts on are typed. A member the gateway replaces
// (the model name) or adds is written in place of, or after, the original
// ones.
//
// A member name repeated in one object of a request — at the top level, in
// a message, a tool call or its function, a tool or its function — is
// refused ([KindDuplicate], naming the path): OpenAI's parser keeps the
// last, others keep the first, and a gateway that checked one value and
// forwarded both would let a client past its own checks (a key's model
// list, for one). [ParseObject], used on upstream responses, keeps
// duplicates as sent and reads the last.
//
// # Streams
//
// [Events] wraps github.com/tmaxmax/go-sse's reader: it checks the context
// before each event it yields (docs/spec.md §6), turns `data: [DONE]` into a terminal
// event, and reports a broken body as an error. It never decides that a
// stream is complete; the caller does, from whether [Event.Done] was seen. The
// default maximum event size is [DefaultMaxEventSize] (8 MiB), well above
// go-sse's 64 KB, because some relays send a whole response as one event.
//
// # One normalizer
//
// Every upstream answer, streamed or whole, goes through one [Normalizer]
// built per attempt by [NewNormalizer] from [Options] (the upstream's
// [Quirks], buffer or stream, the reasoning field, limits). Each chunk is
// parsed once; the tool-call [Collector] aggregates the fragments by index
// and validates them (docs/spec.md §2); the quirks the upstream has are fixed in
// that one place (A01–A43 in docs/quirks.md, each switchable by name with
// [ParseQuirks]), and what was fixed is returned as a [Fixes] value.
// The whole-answer path ([Normalizer.Whole]) reuses the streamed code on
// the answer's choices, so a quirk is fixed the same way both ways.
// testdata/normalize holds golden files, an upstream stream in and the
// client's stream out, one per behaviour.
package wire
