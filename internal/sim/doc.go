// Package sim is a simulated OpenAI-compatible provider: POST
// /v1/chat/completions (streamed and not) and GET /v1/models. toolgate's
// embedded default config routes every model to it, `make demo` and the
// tests use it as their upstream, and the benchmarks run it in fast mode.
//
// The model name picks the scripted behaviour (the first keyword it
// contains, in this order):
//
//	agent   a coding agent's model (agent.go), in every protocol's mode:
//	        its shell tool (Bash, exec_command, bash) called with
//	        AgentCommand, then, on the tool's result, text quoting it
//	error   the upstream fails: status 500, or the three digits after
//	        "error-" (sim-error-429 answers 429), with an OpenAI error body
//	cut     the stream (or body) is cut mid-way: the connection is aborted
//	slow    text chunks SlowDelay apart (default 200ms); stops when the
//	        caller goes away, counted in Cancellations
//	tool    one tool call: the first declared tool (or get_weather) with
//	        arguments {"city":"Paris"}, streamed in fragments
//	parallel  four parallel calls of that tool, one after the other, the
//	        arguments of each (about 500 bytes) streamed in 200 fragments
//	else    a short text answer in Chunks content chunks
//
// Independently of the script, a streamed answer whose model name
// contains "paced" (sim-parallel-paced) leaves one chunk at a time,
// Options.PacedDelay apart (1ms by default), also in fast mode: a model
// emitting its tokens, each chunk in its own read at the other end.
//
// A streamed request whose model name contains "q-<name>" plays one of the
// quirk scripts of docs/quirks.md section A instead; QuirkNames lists them, and
// quirks.go says which quirk each reproduces.
//
// Independently of the script, a model name containing "strict" (or
// Options.Strict) makes the simulator check the transcript against OpenAI's
// tool-call pairing rules first and answer OpenAI's own 400 wording when it
// breaks them (docs/quirks.md C01–C03, via wire.CheckToolPairs).
//
// Independently of the script, a model name containing "plain" is a model
// that does not reason (gpt-4.1, gpt-4o): a request with reasoning_effort,
// reasoning or thinking is refused with OpenAI's 400 ("Unrecognized
// request argument supplied: reasoning_effort"); in the Responses mode, a
// reasoning.effort ("Unsupported parameter: 'reasoning.effort' is not
// supported with this model.").
//
// Every request's body is kept: LastRequest returns the latest. Fast mode
// pre-encodes each response once, with fixed ids and model "sim", so that a
// benchmark measures the gateway rather than the simulator.
//
// A Sim is safe for concurrent use.
package sim
