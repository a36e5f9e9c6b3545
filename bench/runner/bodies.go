package main

import "github.com/toolgate/toolgate/internal/sim"

// toolBody is a typical agent turn, non-streamed: a system prompt, a user
// message and one declared tool; the simulator answers with a tool call,
// whose arguments toolgate validates.
var toolBody = []byte(`{"model":"sim-tool","messages":[{"role":"system","content":"You are a helpful assistant. Use the tools when they help."},{"role":"user","content":"What is the weather in Paris?"}],"tools":[` + sim.WeatherTool + `]}`)

// streamBody is a streamed text answer (50 chunks from the simulator).
var streamBody = []byte(`{"model":"sim-text","stream":true,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]}`)

// parallelBody is a streamed answer of four parallel tool calls, each
// call's arguments in 200 fragments (the simulator's parallel script):
// the traffic toolgate exists for.
var parallelBody = []byte(`{"model":"sim-parallel","stream":true,"messages":[{"role":"user","content":"Weather in four cities, please."}],"tools":[` + sim.WeatherTool + `]}`)

// pacedParallelBody is parallelBody's answer paced by the simulator, its
// 800 fragments a millisecond apart (about a second a stream): each
// fragment reaches the gateway in a read of its own, as a model's tokens
// do.
var pacedParallelBody = []byte(`{"model":"sim-parallel-paced","stream":true,"messages":[{"role":"user","content":"Weather in four cities, please."}],"tools":[` + sim.WeatherTool + `]}`)

// slowBody is a long stream of one chunk a second (the slow simulator).
var slowBody = []byte(`{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"Take your time."}]}`)

// transcriptBody is a 100-message agent transcript (33 tool-call turns),
// one of whose calls was never answered: repair seals it.
func transcriptBody() []byte { return sim.Transcript("sim-text", 100, 16) }
