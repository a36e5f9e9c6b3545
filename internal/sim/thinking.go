package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// thinking imitates DeepSeek's thinking mode (model names containing
// "deepseek"): every answer carries reasoning_content; a forced tool_choice
// with thinking enabled is refused; a request with tools
// whose earlier assistant tool-call turns lack reasoning_content is refused
// with DeepSeek's real 400 (docs/quirks.md C15). It calls get_weather until the
// transcript holds two tool results, then answers in text.
func (s *Sim) thinking(w http.ResponseWriter, body []byte, stream bool) {
	req, err := wire.DecodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	_, hasTools := req.Get("tools")
	if tc, ok := req.Get("tool_choice"); ok && string(tc) != `"auto"` && string(tc) != `"none"` {
		if th, ok := req.Get("thinking"); ok && strings.Contains(string(th), "enabled") {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "Thinking may not be enabled when tool_choice forces tool use.")
			return
		}
	}
	results := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results++
		}
		if hasTools && m.Role == "assistant" && len(m.ToolCalls) > 0 {
			var v struct {
				ReasoningContent string `json:"reasoning_content"`
			}
			if json.Unmarshal(m.Raw, &v) != nil || v.ReasoningContent == "" {
				writeError(w, http.StatusBadRequest, "invalid_request_error", "The `reasoning_content` in the thinking mode must be passed back to the API.")
				return
			}
		}
	}
	if strings.Contains(req.Model, "agent") {
		s.chatAgent(w, req, true)
		return
	}
	n := s.seq.Add(1)
	reasoning := fmt.Sprintf("Thinking, step %d.", results+1)
	id := fmt.Sprintf("chatcmpl-ds-%d", n)
	callID := fmt.Sprintf("call_ds_%d_%d", n, results)
	call := hasTools && results < 2
	if !stream {
		msg := map[string]any{"role": "assistant", "content": "Done: it is sunny.", "reasoning_content": reasoning}
		finish := "stop"
		if call {
			msg["content"] = ""
			msg["tool_calls"] = []any{map[string]any{"id": callID, "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}
			finish = "tool_calls"
		}
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion", "created": 1700000000, "model": "deepseek-sim",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	ev := func(delta, finish string) string {
		return fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"deepseek-sim\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", id, delta, finish)
	}
	r, _ := json.Marshal(reasoning)
	evs := []string{ev(`{"role":"assistant","content":"","reasoning_content":`+string(r)+`}`, "null")}
	if call {
		evs = append(evs, ev(`{"tool_calls":[{"index":0,"id":"`+callID+`","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`, "null"),
			ev(`{}`, `"tool_calls"`))
	} else {
		evs = append(evs, ev(`{"content":"Done: it is sunny."}`, "null"), ev(`{}`, `"stop"`))
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, strings.Join(evs, "")+"data: [DONE]\n\n")
}
