package bedrock

import (
	"crypto/rand"
	"encoding/json"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Whole translates a whole Converse answer: the chat.completion, and its
// reasoning blocks as Bedrock wants them back (Carried). A body that is
// not a Converse answer is a *wire.IncompleteError for upstream.
func Whole(b []byte, upstream string) (translate.Answer, error) {
	var a struct {
		Output *struct {
			Message struct {
				Content []struct {
					Text    *string `json:"text"`
					ToolUse *struct {
						ToolUseID string          `json:"toolUseId"`
						Name      string          `json:"name"`
						Input     json.RawMessage `json:"input"`
					} `json:"toolUse"`
					ReasoningContent json.RawMessage `json:"reasoningContent"`
				} `json:"content"`
			} `json:"message"`
		} `json:"output"`
		StopReason string `json:"stopReason"`
		Usage      usage  `json:"usage"`
		Message    string `json:"message"`
	}
	if err := json.Unmarshal(b, &a); err != nil || a.Output == nil {
		msg := "the response is not a converse answer"
		if a.Message != "" {
			msg = wire.Clip(a.Message)
		}
		return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: msg}
	}
	var text, reasoning strings.Builder
	var calls, thoughts []json.RawMessage
	for _, c := range a.Output.Message.Content {
		switch {
		case c.Text != nil:
			text.WriteString(*c.Text)
		case c.ToolUse != nil:
			args := "{}"
			if len(c.ToolUse.Input) > 0 && string(c.ToolUse.Input) != "null" {
				args = string(c.ToolUse.Input)
			}
			calls = append(calls, translate.ToolCall(c.ToolUse.ToolUseID, c.ToolUse.Name, args))
		case c.ReasoningContent != nil:
			var r struct {
				ReasoningText struct {
					Text string `json:"text"`
				} `json:"reasoningText"`
			}
			_ = json.Unmarshal(c.ReasoningContent, &r)
			reasoning.WriteString(r.ReasoningText.Text)
			// Kept as Bedrock wrote it: the block is what goes back.
			thoughts = append(thoughts, append(append([]byte(`{"reasoningContent":`), c.ReasoningContent...), '}'))
		}
	}
	ans := translate.Answer{Chat: translate.Chunks{ID: "chatcmpl-" + rand.Text(), Created: time.Now().Unix()}.
		Completion(text.String(), reasoning.String(), calls, finishReason(a.StopReason), a.Usage.openAI())}
	if len(thoughts) > 0 {
		ans.Carried, _ = json.Marshal(thoughts)
	}
	return ans, nil
}
