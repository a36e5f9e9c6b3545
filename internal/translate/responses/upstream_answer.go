package responses

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// upstreamEvent is the part of a Responses stream event the translator
// reads.
type upstreamEvent struct {
	Type     string          `json:"type"`
	Delta    string          `json:"delta"`
	Item     json.RawMessage `json:"item"`
	Response *upstreamObject `json:"response"`
	Message  string          `json:"message"`
	Code     string          `json:"code"`
}

// upstreamObject is the part of a response object the translator reads.
type upstreamObject struct {
	ID                string            `json:"id"`
	Model             string            `json:"model"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// outputItem is the part of an output item the translator reads.
type outputItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Arguments string `json:"arguments"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// flatten names a call of a namespace tool's function as the chat model
// does (NamespaceSep).
func (it *outputItem) flatten() {
	if it.Namespace != "" {
		it.Name = it.Namespace + NamespaceSep + it.Name
	}
}

// chatUsageOf is a response's usage as chat completions report it.
func (o *upstreamObject) chatUsage() json.RawMessage {
	if o == nil || o.Usage == nil {
		return nil
	}
	u := o.Usage
	b, _ := json.Marshal(map[string]any{
		"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
		"prompt_tokens_details":     map[string]int64{"cached_tokens": u.InputTokensDetails.CachedTokens},
		"completion_tokens_details": map[string]int64{"reasoning_tokens": u.OutputTokensDetails.ReasoningTokens},
	})
	return b
}

// finish maps how a response ended onto a chat finish reason; failed is
// true for a response that failed.
func (o *upstreamObject) finish(calls bool) (reason string, failed bool) {
	switch {
	case o.Status == "failed", o.Status == "cancelled", o.Status != "completed" && o.Status != "incomplete" && o.Error != nil:
		return "", true
	case o.Status == "incomplete":
		if o.IncompleteDetails != nil && o.IncompleteDetails.Reason == "content_filter" {
			return "content_filter", false
		}
		return "length", false
	}
	if calls {
		return "tool_calls", false
	}
	return "stop", false
}

// failure is the message of a failed response.
func (o *upstreamObject) failure() string {
	if o != nil && o.Error != nil && o.Error.Message != "" {
		return o.Error.Message
	}
	return "the response failed"
}

// UpstreamStream translates one streamed Responses answer into
// chat.completion.chunk payloads: text deltas, reasoning summary deltas
// (as reasoning), each function call whole once its item is done, the
// finish and the usage at response.completed or response.incomplete (the
// end marker); response.failed and error events end the stream with the
// error. It is created per response and is not safe for concurrent use.
type UpstreamStream struct {
	id, model string
	created   int64
	calls     int
	carried   Carried
	ended     bool
	opts      translate.StreamOptions
}

// NewUpstreamStream returns an UpstreamStream. With o.Thoughts it hands
// each reasoning item on, its encrypted content sealed for o.Upstream
// (Seal), in the delta members translate.ReasoningIDMember and
// translate.ReasoningItemMember.
func NewUpstreamStream(o translate.StreamOptions) *UpstreamStream {
	return &UpstreamStream{opts: o}
}

// Event returns the chunks one event becomes.
func (s *UpstreamStream) Event(data []byte) ([][]byte, bool, error) {
	var ev upstreamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, false, &wire.ProtocolError{Index: -1, Msg: "a responses stream event is not a JSON object: " + wire.Clip(err.Error())}
	}
	switch ev.Type {
	case "response.created":
		if ev.Response != nil {
			s.id, s.model = ev.Response.ID, ev.Response.Model
		}
		s.created = time.Now().Unix()
		return [][]byte{s.chunk(`{"role":"assistant","content":""}`, "null")}, false, nil
	case "response.output_text.delta":
		return [][]byte{s.chunk(`{"content":`+translate.Quote(ev.Delta)+`}`, "null")}, false, nil
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		return [][]byte{s.chunk(`{"reasoning_content":`+translate.Quote(ev.Delta)+`}`, "null")}, false, nil
	case "response.output_item.added":
		var it outputItem
		if s.opts.Thoughts && json.Unmarshal(ev.Item, &it) == nil && it.ID != "" {
			switch it.Type {
			case "reasoning":
				return [][]byte{s.chunk(`{"`+translate.ReasoningIDMember+`":`+translate.Quote(it.ID)+`}`, "null")}, false, nil
			case "message":
				return [][]byte{s.chunk(`{"`+translate.MessageIDMember+`":`+translate.Quote(it.ID)+`}`, "null")}, false, nil
			}
		}
	case "response.output_item.done":
		return s.itemDone(ev.Item), false, nil
	case "response.completed", "response.incomplete", "response.failed":
		return s.end(ev.Response), ev.Type != "response.failed", nil
	case "error":
		return [][]byte{translate.ErrorChunk(ev.Message, ev.Code)}, false, nil
	}
	return nil, false, nil
}

// itemDone keeps a finished item for Carried and sends a function call
// whole.
func (s *UpstreamStream) itemDone(raw json.RawMessage) [][]byte {
	var it outputItem
	if json.Unmarshal(raw, &it) != nil {
		return nil
	}
	switch it.Type {
	case "reasoning":
		s.carried.Items = append(s.carried.Items, carriedItem{Type: "reasoning", Reasoning: append(json.RawMessage(nil), raw...)})
		if s.opts.Thoughts {
			return [][]byte{s.chunk(`{"`+translate.ReasoningItemMember+`":`+string(SealItem(raw, s.opts.Upstream, s.opts.Sealer))+`}`, "null")}
		}
	case "function_call":
		it.flatten()
		s.carried.Items = append(s.carried.Items, carriedItem{Type: "function_call", ID: it.ID, CallID: it.CallID})
		k := s.calls
		s.calls++
		args := it.Arguments
		call := s.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+translate.Quote(it.CallID)+`,"type":"function","function":{"name":`+
			translate.Quote(it.Name)+`,"arguments":`+translate.Quote(args)+`}}]}`, "null")
		if s.opts.Thoughts && it.ID != "" { // the item id its reasoning item names, before the call
			return [][]byte{s.chunk(`{"`+translate.CallItemMember+`":{"call_id":`+translate.Quote(it.CallID)+`,"id":`+translate.Quote(it.ID)+`}}`, "null"), call}
		}
		return [][]byte{call}
	default:
		s.carried.Items = append(s.carried.Items, carriedItem{Type: it.Type, ID: it.ID})
		if s.opts.Thoughts && len(raw) > 0 && raw[0] == '{' {
			return [][]byte{s.chunk(`{"`+translate.OutputItemMember+`":`+string(raw)+`}`, "null")}
		}
	}
	return nil
}

// end sends the finish and the usage, or the error of a failed response.
func (s *UpstreamStream) end(o *upstreamObject) [][]byte {
	if o == nil {
		o = &upstreamObject{Status: "completed"}
	}
	reason, failed := o.finish(s.calls > 0)
	if failed {
		return [][]byte{translate.ErrorChunk(o.failure(), "response_failed")}
	}
	s.ended = true
	out := [][]byte{s.chunk(`{}`, strconv.Quote(reason))}
	if u := o.chatUsage(); u != nil {
		out = append(out, translate.Chunks{ID: s.id, Model: s.model, Created: s.created}.Usage(u))
	}
	return out
}

// Ended reports whether response.completed or response.incomplete was
// seen.
func (s *UpstreamStream) Ended() bool { return s.ended }

// Carried returns the answer's items for the next turn when it made calls
// after reasoning (a JSON Carried), or nil.
func (s *UpstreamStream) Carried() []byte { return s.carried.encode() }

// ResponseID is the upstream's id for the response (translate.Identified).
func (s *UpstreamStream) ResponseID() string { return s.id }

// Kinds names no normalization: the Responses API's calls come whole.
func (s *UpstreamStream) Kinds() []string { return nil }

func (c Carried) encode() []byte {
	reasoning := false
	for _, it := range c.Items {
		if it.Type == "reasoning" {
			reasoning = true
		}
		if it.Type == "function_call" && reasoning {
			b, _ := json.Marshal(c)
			return b
		}
	}
	return nil
}

// chunk is one chat.completion.chunk of the response.
func (s *UpstreamStream) chunk(delta, finish string) []byte {
	return translate.Chunks{ID: s.id, Model: s.model, Created: s.created}.Delta(delta, finish)
}

// UpstreamWhole translates a whole Responses answer (a response object)
// into a chat.completion, its items for the next turn as Carried. A
// failed response, an error body or a body that is no response is a
// *wire.IncompleteError for upstream.
func UpstreamWhole(b []byte, upstream string) (translate.Answer, error) {
	var o upstreamObject
	if err := json.Unmarshal(b, &o); err != nil || (o.Status == "" && o.Error == nil) {
		return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: "the response is not a Responses API response object"}
	}
	s := UpstreamStream{id: o.ID, model: o.Model}
	var text, reasoning strings.Builder
	var calls []json.RawMessage
	for _, raw := range o.Output {
		var it outputItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		s.itemDone(raw)
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				text.WriteString(c.Text + c.Refusal)
			}
		case "reasoning":
			for _, sum := range it.Summary {
				reasoning.WriteString(sum.Text)
			}
		case "function_call":
			it.flatten()
			calls = append(calls, translate.ToolCall(it.CallID, it.Name, it.Arguments))
		}
	}
	reason, failed := o.finish(len(calls) > 0)
	if failed {
		return translate.Answer{}, &wire.IncompleteError{Upstream: upstream, Message: wire.Clip(o.failure())}
	}
	chat := translate.Chunks{ID: o.ID, Model: o.Model, Created: time.Now().Unix()}.
		Completion(text.String(), reasoning.String(), calls, reason, o.chatUsage())
	return translate.Answer{Chat: chat, Carried: s.Carried(), ResponseID: o.ID}, nil
}
