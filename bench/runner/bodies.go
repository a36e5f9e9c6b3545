package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"The weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}}`

// toolBody is a typical agent turn, non-streamed: a system prompt, a user
// message and one declared tool; the simulator answers with a tool call,
// whose arguments toolgate validates.
var toolBody = []byte(`{"model":"sim-tool","messages":[{"role":"system","content":"You are a helpful assistant. Use the tools when they help."},{"role":"user","content":"What is the weather in Paris?"}],"tools":[` + weatherTool + `]}`)

// streamBody is a streamed text answer (50 chunks from the simulator).
var streamBody = []byte(`{"model":"sim-text","stream":true,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]}`)

// slowBody is a long stream of one chunk a second (the slow simulator).
var slowBody = []byte(`{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"Take your time."}]}`)

// transcriptBody is a 100-message agent transcript: a system prompt, then
// 33 turns of user message, assistant tool call and tool reply, one of
// whose calls was never answered (repair seals it).
func transcriptBody() []byte {
	msgs := []map[string]any{{"role": "system", "content": "You are a careful agent. " + strings.Repeat("Follow the rules. ", 20)}}
	for i := range 33 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "user", "content": fmt.Sprintf("Step %d: %s", i, strings.Repeat("check the next city and report. ", 8))},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": id, "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": fmt.Sprintf(`{"city":"City %d","unit":"c"}`, i)}}}})
		if i != 16 {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": fmt.Sprintf(`{"city":"City %d","temp":%d,"sky":"%s"}`, i, 10+i%15, strings.Repeat("clear ", 10))})
		}
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "Summarize."})
	var tool any
	_ = json.Unmarshal([]byte(weatherTool), &tool)
	b, _ := json.Marshal(map[string]any{"model": "sim-text", "messages": msgs, "tools": []any{tool}})
	return b
}
