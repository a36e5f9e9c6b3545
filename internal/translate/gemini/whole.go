package gemini

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Whole translates a whole (non-streamed) GenerateContentResponse: the
// chat.completion, and its thought signatures as Carried. An error body,
// a body that is no answer, or an answer that failed
// (MALFORMED_FUNCTION_CALL) is a *wire.IncompleteError for upstream.
func Whole(b []byte, upstream string) (translate.Answer, error) {
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: "the response is not a gemini GenerateContentResponse"}
	}
	if a.Error != nil {
		return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: wire.Clip(a.Error.Message)}
	}
	s := Stream{seed: seed(a.ResponseID)}
	var text, reasoning strings.Builder
	var calls []json.RawMessage
	reason := "stop"
	if len(a.Candidates) == 0 {
		if a.PromptFeedback == nil || a.PromptFeedback.BlockReason == "" {
			return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: "the response has no candidate"}
		}
		reason = "content_filter"
	} else {
		c := a.Candidates[0]
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				for _, chunk := range s.part(p) {
					calls = append(calls, callOf(chunk))
				}
			case p.Thought:
				reasoning.WriteString(p.Text)
			default:
				s.part(p) // its signature
				text.WriteString(p.Text)
			}
		}
		var failed bool
		if reason, failed = finishReason(c.FinishReason, len(calls) > 0); failed {
			return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: finishError(c.FinishReason, c.FinishMessage)}
		}
	}
	u := usage{}
	if a.UsageMetadata != nil {
		u = *a.UsageMetadata
	}
	chat := translate.Chunks{ID: "chatcmpl-" + a.ResponseID, Model: a.ModelVersion, Created: time.Now().Unix()}.
		Completion(text.String(), reasoning.String(), calls, reason, u.openAI())
	return translate.Answer{Chat: chat, Carried: s.Carried(), Kinds: s.Kinds()}, nil
}

// callOf takes the tool call out of a chunk the stream translator made.
func callOf(chunk []byte) json.RawMessage {
	var c struct {
		Choices []struct {
			Delta struct {
				ToolCalls []map[string]json.RawMessage `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	_ = json.Unmarshal(chunk, &c)
	call := c.Choices[0].Delta.ToolCalls[0]
	delete(call, "index")
	b, _ := json.Marshal(call)
	return b
}
