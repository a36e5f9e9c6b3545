package anthropic

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// UpstreamWhole translates a whole (non-streamed) Messages response: the
// chat.completion, its thinking blocks as Anthropic wants them back
// (Carried), and "pause_turn" among its Kinds when it stopped with
// pause_turn. An error body or a body that is not a message is a
// *wire.IncompleteError for upstream.
func UpstreamWhole(b []byte, upstream string) (translate.Answer, error) {
	var m struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Model   string `json:"model"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Thinking  string          `json:"thinking"`
			Signature string          `json:"signature"`
			Data      string          `json:"data"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string        `json:"stop_reason"`
		Usage      upstreamUsage `json:"usage"`
		Error      *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Type != "message" {
		if m.Error != nil {
			return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: wire.Clip(m.Error.Message), Type: translate.MessagesErrorType(wire.Clip(m.Error.Type))}
		}
		return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: "the response is not an anthropic message"}
	}
	var text, reasoning strings.Builder
	var thoughts []streamedThought
	var calls []json.RawMessage
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			text.WriteString(c.Text)
		case "thinking":
			reasoning.WriteString(c.Thinking)
			thoughts = append(thoughts, streamedThought{Type: "thinking", Thinking: c.Thinking, Signature: c.Signature})
		case "redacted_thinking":
			thoughts = append(thoughts, streamedThought{Type: "redacted_thinking", Data: c.Data})
		case "tool_use":
			args := "{}"
			if len(c.Input) > 0 {
				args = string(c.Input)
			}
			calls = append(calls, translate.ToolCall(c.ID, c.Name, args))
		}
	}
	s := UpstreamStream{}
	a := translate.Answer{Chat: translate.Chunks{ID: m.ID, Model: m.Model, Created: time.Now().Unix()}.
		Completion(text.String(), reasoning.String(), calls, s.finishReason(m.StopReason), m.Usage.openAI())}
	if len(thoughts) > 0 {
		a.Carried, _ = json.Marshal(thoughts)
	}
	a.Kinds = s.Kinds()
	return a, nil
}
