package sim

import (
	"encoding/json"
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

// events returns the streamed response as SSE events, `data: [DONE]` last.
func (p plan) events() [][]byte {
	var evs [][]byte
	evs = append(evs, event(p.chunk(obj{"role": "assistant", "content": ""}, nil)))
	finish := "stop"
	if p.script == scriptTool {
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
	} else {
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
	if p.script == scriptTool {
		out = 12
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
	if p.script == scriptTool {
		finish = "tool_calls"
		msg = obj{"role": "assistant", "content": nil, "tool_calls": []obj{{
			"id": "call_sim_1", "type": "function", "function": obj{"name": p.tool, "arguments": toolArgs},
		}}}
	}
	b, _ := json.Marshal(obj{
		"id": p.id, "object": "chat.completion", "created": 1700000000, "model": p.model,
		"choices": []obj{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   p.usageObj(),
	})
	return b
}
