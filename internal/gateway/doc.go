// Package gateway is toolgate's HTTP surface: the chi router of the main
// listener (POST /v1/chat/completions, GET /v1/models), the admin listener
// (/metrics, /healthz, /readyz), and the chat handler that runs the pipeline
// of DESIGN.md — decode, route, encode, send upstream, re-stream — as one
// straight line over per-request values.
//
// Decisions recorded here:
//
//   - The commit point is the first event written to the client. Before it,
//     any failure (upstream status, connection error, a stream that ends
//     before its first event) is answered with an HTTP status and an OpenAI
//     error body; after it, with one `data: {"error":…}` event and no
//     `[DONE]` (SPEC §7).
//   - A stream is complete only when the upstream sent `data: [DONE]`. A read
//     error, a cut body or an EOF without it is reported as incomplete
//     (code "upstream_stream_incomplete"), never as success. An error object
//     sent by the upstream mid-stream ends the stream the same way, with the
//     upstream's message.
//   - Events with no data (a bare `event: ping`) are not forwarded; SSE
//     comments never reach the client (go-sse drops them).
//   - Upstream statuses map as SPEC §7 says: a 4xx about the request (400,
//     404, 409, 413, 422) passes through with the upstream's message, type,
//     param and code; 429 stays 429; 401/403 become 502, since they concern
//     the gateway's credentials, not the client's; 408/504 and deadlines
//     become 504; every other failure 502.
//   - A client that goes away cancels the upstream call through the
//     request's context; the access log records status 499 and client_gone.
//   - Each write to a stream gets a fresh deadline (server.write_idle_timeout)
//     so a stalled client is cut while a paused stream is not; there is no
//     server WriteTimeout.
//   - GET /v1/models lists every route: exact routes by their model name,
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
package gateway
