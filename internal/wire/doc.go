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
// [Events] reads server-sent events as the SSE specification's parsing
// rules say (CR, LF and CRLF line ends, a CR held across reads, a leading
// BOM, comments, event/id/retry fields, one optional space after the
// colon, lines without a colon, an unfinished last event dropped at EOF),
// from one pooled buffer per stream, and yields each event as a view into
// it, valid until the next: a single-line data event (what every provider
// sends) is never copied, and each byte is searched at most once for
// '\n' and once for '\r', with bytes.IndexByte, whatever line ends the
// stream uses (BenchmarkEventsLineEnds). It checks the context before
// each event it yields (docs/spec.md §6), turns `data: [DONE]` into a
// terminal event, and reports a broken body as an error. It never decides
// that a stream is complete; the caller does, from whether [Event.Done]
// was seen. The default maximum event size is [DefaultMaxEventSize]
// (8 MiB), because some relays send a whole response as one event.
//
// The reader is the project's own for the same reason as the JSON scanner
// (hand-written because it measured 16× faster than encoding/json on the
// request path): github.com/tmaxmax/go-sse, the reader it replaced, copies
// every event twice, takes no buffer from its caller and rescans its
// buffered bytes on every read; in a CPU profile of tool-call streams its
// parser was 41% of the gateway's CPU, and BenchmarkEvents reads 1,000
// events with it in about 10× the time and 2,000 allocations, against 0
// for Events. go-sse stays as the reference: FuzzEventsMatchGoSSE and
// TestEventsMatchGoSSE require both to read the same events and errors
// from the same bytes, split at any read boundary, and name the two cases
// where go-sse departs from the specification.
//
// The Normalizer copies whatever it keeps of a chunk (a call's id, name
// and arguments, held members), so the view is enough; a Normalizer is
// released to a pool when its stream ends ([Normalizer.Release]).
//
// A stream waiting for its upstream holds its state only: before a read
// made with nothing unread, the reader puts its buffer back in its pool
// and waits with a read of its own 64 bytes, and tells the caller
// ([ReadOptions.BeforeWait]), whose Normalizer then puts back its
// per-chunk scratch ([Normalizer.Rest]); both are taken again for the
// next event. The Normalizer keeps its template (its last chunk's bytes
// around the string that changes, up to 2 KB), so that a stream paced by
// its model — one chunk per read, as every provider sends them — is not
// parsed in full chunk by chunk. A source that fills every read the
// reader gives it (a whole answer arriving at once) has the reader take a
// 64 KB buffer from a pool of its own rather than the 1 KB one, read into
// straight from the upstream connection's buffer, so that reading, Run
// and the write to the client cost once per 64 KB, not once per kilobyte;
// the first short read sends it back to a small buffer before it reads
// again.
//
// A chat stream's steady middle, the same chunk again and again with a new
// string inside, is not even read event by event: at every event boundary
// whose first line has arrived, the reader offers its unread bytes to a
// [Runner] ([ReadOptions.Run]), and the gateway's is [Normalizer.Run].
// It takes each event that is exactly "data: ", a chunk its template fits
// and a blank line, adds the string to the text or the call, and appends
// the events to the client's [Writer] in one go, as they came or rewritten
// around their strings. Anything else stops it and is read and normalized
// as before: another field, a CR, a second data line, a chunk the template
// does not fit, a limit reached, a template made from a chunk that came
// over several data lines. TestRunMatchesEvents and
// FuzzRunMatchesEvents require the same bytes to the client and the same
// normalizer state either way, from any bytes in any reads.
//
// A chunk that needs no fix goes out as it came, so that Run can send it
// that way: text deltas are never decoded, and a continuation fragment
// that already says what its canonical form says (its call's canonical
// index, its arguments as a string, nothing else) is not rewritten for
// the order of its members or its spaces (docs/spec.md §2).
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
//
// # The conformance corpus
//
// testdata/quirks holds, for every answer quirk of docs/quirks.md, at
// least two recorded answers in the shapes that quirk's upstreams give
// them, each with what a client must end up with (its format:
// internal/testing/quirkcorpus). TestQuirkCorpus reads each as a strict
// client does after the full path, and requires every fast path — the
// template, Run — to give the client the same bytes, under each option
// that changes what is held or sent, read in any pieces; FuzzQuirkMoves
// does the same for streams built from quirk moves (moves_test.go). A
// fast path exists only beside that referee (docs/design.md).
package wire
