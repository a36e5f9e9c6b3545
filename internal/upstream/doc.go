// Package upstream is toolgate's HTTP client to providers: one [Client] per
// configured upstream, with its own transport (cloned from
// http.DefaultTransport, never mutating it), connect and response-header
// timeouts, the upstream's credentials, and bounded capture of error bodies.
//
// The body sent is always a complete buffer with GetBody set, so the
// transport can resend it on a fresh connection when a reused keep-alive
// connection turns out to be closed before anything was written
// (golang/go#40747); the client's body is never streamed through.
//
// Cancellation (docs/spec.md §6): the call runs on the caller's context, so a client
// that goes away cancels it at once; if the context is already done no
// request is sent. Headers: the client's credentials (Authorization, api-key,
// x-api-key, cookies, OpenAI-Organization/Project) and hop-by-hop headers are
// never forwarded; the upstream's key comes from configuration.
package upstream
