// Package policy judges whether a response satisfies its request — the
// completion policy of docs/spec.md §3. It never takes over the request loop:
// [Prepare] reads the request once (refusing an unknown tool_choice before
// anything is sent) and returns a [Judge]; the gateway feeds the judge what
// the wire layer collected and gets an [Outcome].
//
// Modes, per route:
//
//   - default: judged by whether the request declares tools. A call when
//     none are declared is a violation; calls must end with finish_reason
//     "tool_calls" and a "tool_calls" finish needs calls; a response with no
//     finish reason is a violation.
//   - session (the gateway's default): judged by tool_choice. "auto" needs
//     every started call complete; "required" at least one complete call;
//     a function object at least one complete call of that function; "none"
//     no call at all. With tool_choice omitted, default's rules apply.
//   - off: nothing about calls is judged.
//
// In every mode a stream that ended without its end marker is
// MODEL_INCOMPLETE and a tool-call protocol error (docs/spec.md §2) is a
// violation: cancellation and transport failure are never turned into
// success. A call to a tool the request did not declare is a violation.
// Unless argument validation is off, a call whose arguments are not JSON at
// all is a violation even in annotate mode: it was cut off (docs/quirks.md A19,
// a truncation reported as "tool_calls"), and passing it would be a silent
// success. Schema failures follow the mode (annotate or reject).
// parallel_tool_calls is a field sent upstream and is not judged, unless
// the route opts in (EnforceParallel): then parallel_tool_calls false with
// more than one call is a violation.
package policy
