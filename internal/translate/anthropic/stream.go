package anthropic

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// event is the part of a Messages stream event the translator reads.
type event struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID    string        `json:"id"`
		Model string        `json:"model"`
		Usage upstreamUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type     string          `json:"type"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Data     string          `json:"data"`
		Input    json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string          `json:"type"`
		Text        string          `json:"text"`
		PartialJSON string          `json:"partial_json"`
		Thinking    string          `json:"thinking"`
		Signature   string          `json:"signature"`
		StopReason  string          `json:"stop_reason"`
		Citation    json.RawMessage `json:"citation"`
	} `json:"delta"`
	Usage *upstreamUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// upstreamUsage is Anthropic's token count.
type upstreamUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// add keeps the largest counts seen (message_start has the input,
// message_delta the output; both may repeat either).
func (u *upstreamUsage) add(v upstreamUsage) {
	u.InputTokens = max(u.InputTokens, v.InputTokens)
	u.OutputTokens = max(u.OutputTokens, v.OutputTokens)
	u.CacheCreationInputTokens = max(u.CacheCreationInputTokens, v.CacheCreationInputTokens)
	u.CacheReadInputTokens = max(u.CacheReadInputTokens, v.CacheReadInputTokens)
}

// openAI is the usage as chat completions report it: the prompt counts
// cached and cache-writing tokens too.
func (u upstreamUsage) openAI() json.RawMessage {
	return translate.CachedUsage(u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
}

// streamedThought is a thinking block as it must go back to Anthropic.
type streamedThought struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// UpstreamStream translates one Messages stream into chat.completion.chunk
// payloads. It is created per response and is not safe for concurrent
// use.
type UpstreamStream struct {
	id, model string
	created   int64
	calls     map[int]int // content block index → canonical call index
	thoughts  []streamedThought
	current   int // the thought the latest thinking block writes to, or -1
	usage     upstreamUsage
	paused    bool
	stopped   bool // message_stop was seen
	opts      translate.StreamOptions
	others    map[int]*otherBlock // blocks the chat model has no slot for, by index, until they stop
}

// otherBlock is a block the chat model has no slot for (a server tool's
// use or result, …), gathered for a client with a slot for it: its start
// as sent, and its input's fragments.
type otherBlock struct {
	start json.RawMessage
	input []byte
}

// NewUpstreamStream returns a Stream. With o.Thoughts it hands on, in the
// gateway's own delta members (translate.SignatureMember, …), what the
// chat model has no slot for: thinking signatures, redacted thinking,
// other blocks whole once they stop, and citations.
func NewUpstreamStream(o translate.StreamOptions) *UpstreamStream {
	return &UpstreamStream{calls: map[int]int{}, current: -1, opts: o}
}

// Event returns the chunks one event of the stream becomes (none for
// most), and done at message_stop. An error event becomes a chunk with an
// error object, which the normalizer ends the stream with. A payload that
// is not a Messages event is an error.
func (s *UpstreamStream) Event(data []byte) (chunks [][]byte, done bool, err error) {
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, false, &wire.ProtocolError{Index: -1, Msg: "an anthropic stream event is not a JSON object: " + wire.Clip(err.Error())}
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			s.id, s.model = ev.Message.ID, ev.Message.Model
			s.usage.add(ev.Message.Usage)
		}
		s.created = time.Now().Unix()
		return [][]byte{s.chunk(`{"role":"assistant","content":""}`, "null")}, false, nil
	case "content_block_start":
		return s.blockStart(ev, data), false, nil
	case "content_block_delta":
		return s.blockDelta(ev), false, nil
	case "content_block_stop":
		return s.blockStop(ev), false, nil
	case "message_delta":
		if ev.Usage != nil {
			s.usage.add(*ev.Usage)
		}
		if ev.Delta == nil || ev.Delta.StopReason == "" {
			return nil, false, nil
		}
		reason := s.finishReason(ev.Delta.StopReason)
		return [][]byte{s.chunk(`{}`, strconv.Quote(reason)), s.usageChunk()}, false, nil
	case "message_stop":
		s.stopped = true
		return nil, true, nil
	case "error":
		msg, typ := "an unspecified error", "api_error"
		if ev.Error != nil {
			msg, typ = ev.Error.Message, ev.Error.Type
		}
		return [][]byte{translate.ErrorChunk(msg, translate.MessagesErrorType(typ))}, false, nil
	}
	return nil, false, nil // ping, and events of later API versions
}

func (s *UpstreamStream) blockStart(ev event, data []byte) [][]byte {
	b := ev.ContentBlock
	if b == nil {
		return nil
	}
	switch b.Type {
	case "text":
		if b.Text != "" {
			return [][]byte{s.chunk(`{"content":`+translate.Quote(b.Text)+`}`, "null")}
		}
	case "tool_use":
		k := len(s.calls)
		s.calls[ev.Index] = k
		args := ""
		if len(b.Input) > 0 && string(b.Input) != "{}" {
			args = string(b.Input)
		}
		return [][]byte{s.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+translate.Quote(b.ID)+`,"type":"function","function":{"name":`+translate.Quote(b.Name)+`,"arguments":`+translate.Quote(args)+`}}]}`, "null")}
	case "thinking":
		s.thoughts = append(s.thoughts, streamedThought{Type: "thinking", Thinking: b.Thinking})
		s.current = len(s.thoughts) - 1
		if b.Thinking != "" {
			return [][]byte{s.chunk(`{"reasoning_content":`+translate.Quote(b.Thinking)+`}`, "null")}
		}
	case "redacted_thinking":
		s.thoughts = append(s.thoughts, streamedThought{Type: "redacted_thinking", Data: b.Data})
		s.current = -1
		if s.opts.Thoughts {
			return [][]byte{s.chunk(`{"`+translate.RedactedMember+`":`+translate.Quote(b.Data)+`}`, "null")}
		}
	default:
		if s.opts.Thoughts {
			var raw struct {
				ContentBlock json.RawMessage `json:"content_block"`
			}
			_ = json.Unmarshal(data, &raw)
			if s.others == nil {
				s.others = map[int]*otherBlock{}
			}
			s.others[ev.Index] = &otherBlock{start: raw.ContentBlock}
		}
	}
	return nil
}

// blockStop hands on a block the chat model has no slot for, whole: its
// start with the input its fragments made.
func (s *UpstreamStream) blockStop(ev event) [][]byte {
	o, ok := s.others[ev.Index]
	if !ok {
		return nil
	}
	delete(s.others, ev.Index)
	block := o.start
	if len(o.input) > 0 && json.Valid(o.input) {
		block, _ = wire.SetMember(block, o.input, "input")
	}
	return [][]byte{s.chunk(`{"`+translate.BlockMember+`":`+string(block)+`}`, "null")}
}

func (s *UpstreamStream) blockDelta(ev event) [][]byte {
	d := ev.Delta
	if d == nil {
		return nil
	}
	switch d.Type {
	case "text_delta":
		return [][]byte{s.chunk(`{"content":`+translate.Quote(d.Text)+`}`, "null")}
	case "input_json_delta":
		if o, ok := s.others[ev.Index]; ok {
			o.input = append(o.input, d.PartialJSON...)
			return nil
		}
		k, ok := s.calls[ev.Index]
		if !ok || d.PartialJSON == "" {
			return nil
		}
		return [][]byte{s.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"function":{"arguments":`+translate.Quote(d.PartialJSON)+`}}]}`, "null")}
	case "thinking_delta":
		if s.current >= 0 {
			s.thoughts[s.current].Thinking += d.Thinking
		}
		return [][]byte{s.chunk(`{"reasoning_content":`+translate.Quote(d.Thinking)+`}`, "null")}
	case "citations_delta":
		if s.opts.Thoughts && len(d.Citation) > 0 && d.Citation[0] == '{' {
			return [][]byte{s.chunk(`{"`+translate.CitationMember+`":`+string(d.Citation)+`}`, "null")}
		}
	case "signature_delta":
		if s.current >= 0 {
			s.thoughts[s.current].Signature += d.Signature
		}
		if s.opts.Thoughts && d.Signature != "" {
			return [][]byte{s.chunk(`{"`+translate.SignatureMember+`":`+translate.Quote(d.Signature)+`}`, "null")}
		}
	}
	return nil
}

// finishReason maps a stop reason onto chat completions' finish reasons.
func (s *UpstreamStream) finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	case "pause_turn":
		s.paused = true
	}
	return "stop" // end_turn, stop_sequence, pause_turn, and stop reasons of later API versions
}

// chunk is one chat.completion.chunk of the response.
func (s *UpstreamStream) chunk(delta, finish string) []byte {
	return translate.Chunks{ID: s.id, Model: s.model, Created: s.created}.Delta(delta, finish)
}

// usageChunk is the response's usage, in a chunk without choices.
func (s *UpstreamStream) usageChunk() []byte {
	return translate.Chunks{ID: s.id, Model: s.model, Created: s.created}.Usage(s.usage.openAI())
}

// Ended reports whether message_stop was seen.
func (s *UpstreamStream) Ended() bool { return s.stopped }

// Carried returns the response's thinking blocks as Anthropic wants them
// back (signatures and redacted data unchanged), a JSON array, or nil.
func (s *UpstreamStream) Carried() []byte {
	if len(s.thoughts) == 0 {
		return nil
	}
	b, _ := json.Marshal(s.thoughts)
	return b
}

// Kinds names "pause_turn" for a response that stopped with pause_turn (a
// long server tool turn Anthropic paused; the client may continue it).
func (s *UpstreamStream) Kinds() []string {
	if s.paused {
		return []string{"pause_turn"}
	}
	return nil
}
