package sim

import (
	"encoding/json"
	"strconv"
	"strings"
)

// answer is the text of every text response, split into chunks.
const answer = "Hello from the toolgate simulator. This answer was streamed in small pieces, the way a real model sends its tokens."

// plan is one response to produce.
type plan struct {
	script script
	model  string
	id     string
	tool   string
	chunks int
	usage  bool
	paced  bool // a stream's chunks leave one at a time, PacedDelay apart
}

type obj = map[string]any

func (p plan) chunk(delta obj, finish any) []byte {
	b, _ := json.Marshal(obj{
		"id": p.id, "object": "chat.completion.chunk", "created": 1700000000, "model": p.model,
		"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}},
	})
	return b
}

func event(data []byte) []byte {
	out := make([]byte, 0, len(data)+8)
	out = append(out, "data: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// pieces splits s into n nearly equal parts (at least one).
func pieces(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	if n > len(s) {
		n = len(s)
	}
	out := make([]string, 0, n)
	size := len(s) / n
	for i := range n {
		end := (i + 1) * size
		if i == n-1 {
			end = len(s)
		}
		out = append(out, s[i*size:end])
	}
	return out
}

const toolArgs = `{"city":"Paris"}`

// The parallel script: parallelCalls calls, the arguments of each
// (parallelArgs) in parallelFragments fragments.
const (
	parallelCalls     = 4
	parallelFragments = 200
	parallelArgs      = `{"city":"Paris","unit":"c","notes":"` + answer + " " + answer + " " + answer + " " + answer + `"}`
)

// parallelEvents are the parallel script's call fragments: each call's
// first fragment (id, name), then its arguments, one call after another.
func (p plan) parallelEvents() [][]byte {
	var evs [][]byte
	for k := range parallelCalls {
		evs = append(evs, event(p.chunk(obj{"tool_calls": []obj{{
			"index": k, "id": "call_sim_" + strconv.Itoa(k+1), "type": "function",
			"function": obj{"name": p.tool, "arguments": ""},
		}}}, nil)))
		for _, part := range pieces(parallelArgs, parallelFragments) {
			evs = append(evs, event(p.chunk(obj{"tool_calls": []obj{{
				"index": k, "function": obj{"arguments": part},
			}}}, nil)))
		}
	}
	return evs
}

// events returns the streamed response as SSE events, `data: [DONE]` last.
func (p plan) events() [][]byte {
	var evs [][]byte
	evs = append(evs, event(p.chunk(obj{"role": "assistant", "content": ""}, nil)))
	finish := "stop"
	switch p.script {
	case scriptParallel:
		finish = "tool_calls"
		evs = append(evs, p.parallelEvents()...)
	case scriptTool:
		finish = "tool_calls"
		evs = append(evs, event(p.chunk(obj{"tool_calls": []obj{{
			"index": 0, "id": "call_sim_1", "type": "function",
			"function": obj{"name": p.tool, "arguments": ""},
		}}}, nil)))
		for _, part := range pieces(toolArgs, 3) {
			evs = append(evs, event(p.chunk(obj{"tool_calls": []obj{{
				"index": 0, "function": obj{"arguments": part},
			}}}, nil)))
		}
	default:
		text := answer
		for len(text) < p.chunks { // long streams repeat the answer
			text += " " + answer
		}
		for _, part := range pieces(text, p.chunks) {
			evs = append(evs, event(p.chunk(obj{"content": part}, nil)))
		}
	}
	evs = append(evs, event(p.chunk(obj{}, finish)))
	if p.usage {
		b, _ := json.Marshal(obj{
			"id": p.id, "object": "chat.completion.chunk", "created": 1700000000, "model": p.model,
			"choices": []obj{}, "usage": p.usageObj(),
		})
		evs = append(evs, event(b))
	}
	return append(evs, []byte("data: [DONE]\n\n"))
}

func (p plan) usageObj() obj {
	out := len(strings.Fields(answer))
	switch p.script {
	case scriptTool:
		out = 12
	case scriptParallel:
		out = parallelCalls * 120
	}
	return obj{"prompt_tokens": 20, "completion_tokens": out, "total_tokens": 20 + out}
}

// encode returns the whole response body: SSE events for a stream, else a
// chat.completion object.
func (p plan) encode(stream bool) []byte {
	if stream {
		var b []byte
		for _, ev := range p.events() {
			b = append(b, ev...)
		}
		return b
	}
	msg := obj{"role": "assistant", "content": answer}
	finish := "stop"
	switch p.script {
	case scriptTool:
		finish = "tool_calls"
		msg = obj{"role": "assistant", "content": nil, "tool_calls": []obj{{
			"id": "call_sim_1", "type": "function", "function": obj{"name": p.tool, "arguments": toolArgs},
		}}}
	case scriptParallel:
		finish = "tool_calls"
		var calls []obj
		for k := range parallelCalls {
			calls = append(calls, obj{"id": "call_sim_" + strconv.Itoa(k+1), "type": "function", "function": obj{"name": p.tool, "arguments": parallelArgs}})
		}
		msg = obj{"role": "assistant", "content": nil, "tool_calls": calls}
	}
	b, _ := json.Marshal(obj{
		"id": p.id, "object": "chat.completion", "created": 1700000000, "model": p.model,
		"choices": []obj{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   p.usageObj(),
	})
	return b
}
