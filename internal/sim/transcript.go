package sim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// WeatherTool is the get_weather tool declaration the simulator's tool
// script answers, with a JSON schema for its arguments.
const WeatherTool = `{"type":"function","function":{"name":"get_weather","description":"The weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}}`

// Transcript returns a chat request for model with an agent transcript of
// n messages (n ≥ 3): a system prompt, then turns of a user message, an
// assistant get_weather call and its tool reply, and a last user message.
// When unanswered ≥ 0, the reply to that turn's call is missing (repair
// seals it). For benchmarks and tests of the repair path.
func Transcript(model string, n, unanswered int) []byte {
	msgs := []map[string]any{{"role": "system", "content": "You are a careful agent. " + strings.Repeat("Follow the rules. ", 20)}}
	for i := 0; len(msgs) < n-1; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("Step %d: %s", i, strings.Repeat("check the next city and report. ", 8))})
		if len(msgs) >= n-1 {
			break
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": fmt.Sprintf(`{"city":"City %d","unit":"c"}`, i)}}}})
		if i != unanswered && len(msgs) < n-1 {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": fmt.Sprintf(`{"city":"City %d","temp":%d,"sky":"%s"}`, i, 10+i%15, strings.Repeat("clear ", 10))})
		}
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "Summarize."})
	var tool any
	_ = json.Unmarshal([]byte(WeatherTool), &tool)
	b, _ := json.Marshal(map[string]any{"model": model, "messages": msgs, "tools": []any{tool}})
	return b
}
