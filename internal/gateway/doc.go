// Package gateway is toolgate's HTTP surface: the chi router of the main
// listener (POST /v1/chat/completions, /v1/responses, /v1/messages, GET
// /v1/models, the rest of /v1 forwarded), the admin listener (/metrics,
// /healthz, /readyz), and the one path that runs docs/design.md's
// pipeline as one straight line for every client API.
//
// [New] resolves the config once into a typed, immutable plan per route
// (plan.go): the upstream's client and quirk set, repair steps, policy
// and reasoning settings, budgets, the fallback chain as plans. Nothing
// on the request path reads a config string. A reload builds a new
// Gateway and swaps it whole.
//
// A request is one exchange (chat.go) that passes through stages, each a
// call with one input and one result, in files named after them:
//
//	api.go      the client APIs: each endpoint's answer and error shape (clientAPI)
//	intake.go   the front door: key before body, limits, decoding of gzip/deflate/zstd
//	chat.go     receive (key, body, decoded request, route) → serve (route, fallbacks)
//	match.go    the routes and prices by model name, built at load
//	edge.go     another client API's request, translated for each route's protocol
//	deploy.go   a route's deployments: weighted choice, cooldowns, sticky sessions
//	prepare.go  the request to send on one route, derived from the client's
//	            (trim, normalize, repair, policy, output limit, reasoning, usage)
//	admit.go    the counted admission (sessions, rate limits, spend), once per request
//	attempt.go  send upstream, retrying with backoff; the judge's verdict
//	stream.go   relay a stream through wire.Normalizer, chunk by chunk
//	whole.go    the same normalizer over a non-streamed answer
//	judge.go    what a relayed answer leaves in the record: verdict, fixes,
//	            usage and cost, the reasoning to remember
//	errors.go   classify: the one table from an error to status, body, outcome,
//	            retry, fallback and cooldown; end: the record's status and outcome
//	trace.go    the server span and the attempts' client spans (tracing on)
//
// Beside them: responses.go and messages.go (the Responses and Messages
// APIs' edges: decoded there, translated by internal/translate into the
// same exchange, stored responses and count_tokens), passthrough.go (the
// rest of /v1, forwarded through the same deployment and retry loops),
// models.go (/v1/models), pending.go (the cap on connections still
// sending), admin.go. A handler returns its failure; instrument writes it
// in the client API's shape (fail, errors.go).
//
// The client's decoded request is never changed: each route derives the
// request it sends from it, so a retry or a fallback decodes nothing
// again. Upstream dialects are normalized in wire alone, other protocols
// translated in internal/translate; errors are typed in the package that
// raises them (auth, budget, policy, repair, wire, upstream) and mapped to
// HTTP here, in one table. Each stage writes its
// result into the request's observe.Record; the access line and every
// counter come from that one record (observe.Metrics.Observe), so the
// log and the metrics cannot disagree.
//
// Decisions recorded here:
//
//   - The commit point is the first event written to the client. Before it,
//     any failure (upstream status, connection error, a stream that ends
//     before its first event) is answered with an HTTP status and an error
//     body in the client API's shape; after it, with one `data: {"error":…}` event and no
//     `[DONE]` (docs/spec.md §7).
//   - A stream is complete only when the upstream sent `data: [DONE]`. A read
//     error, a cut body or an EOF without it is reported as incomplete
//     (code "upstream_stream_incomplete"), never as success. An error object
//     sent by the upstream mid-stream ends the stream the same way, with the
//     upstream's message.
//   - Events with no data (a bare `event: ping`) are not forwarded; SSE
//     comments never reach the client (the event reader drops them).
//   - Upstream statuses map as docs/spec.md §7 says: a 4xx about the request (400,
//     404, 409, 413, 422) passes through with the upstream's message, type,
//     param and code; 429 stays 429; 401/403 become 502, since they concern
//     the gateway's credentials, not the client's; 408/504 and deadlines
//     become 504; every other failure 502.
//   - A client that goes away cancels the upstream call through the
//     request's context; the access log records status 499 and client_gone.
//   - Each write to a stream gets a fresh deadline (server.write_idle_timeout)
//     so a stalled client is cut while a paused stream is not; there is no
//     server WriteTimeout.
//   - GET /v1/models lists the routes: exact routes by their model name,
//     pattern routes by their pattern (e.g. "gpt-*"), owned_by the upstream.
//   - The upstream's response headers are passed on except hop-by-hop,
//     framing and cookie headers; its X-Request-Id becomes
//     X-Upstream-Request-Id. A header the gateway set itself (its
//     x-ratelimit-* for a rate-limited key) wins over the upstream's.
//   - Counted admission (a session's max_calls, a key's requests and
//     tokens per minute) is the last step before the upstream call, one
//     store operation for all of them. With the state store unreachable,
//     state.on_error decides: fail_open admits uncounted, fail_closed
//     answers 503; both log a warning and count it.
//   - Every stream asks the upstream for usage; the usage chunk reaches
//     only a client that asked for it, once, last.
//   - The front door costs an unauthenticated client no more than its
//     headers: the key is checked before the body is read, and a request
//     refused before or while its body arrives (no key, a Content-Type
//     that is not JSON, an unknown Content-Encoding, a Content-Length
//     over the limit, a body slower than server.read_body_timeout, too
//     many connections still sending) is answered at once and its
//     connection closed, the rest of its body never waited for. Bodies
//     in gzip, deflate or zstd are decoded, the limit applying to the
//     decoded bytes. Connections still sending their request are capped
//     in all and per client IP ([Pending], served by [NewServer]).
//   - A client that leaves stops its request at the first step that waits
//     (admission, the upstream call, each bound to the request's context);
//     every step before them is linear in the request's size
//     (internal/testing/faults' BenchmarkHostileCPU), so none runs long enough to need
//     a check of its own.
//   - GET /v1/models lists what the caller's key may use.
package gateway
