package bedrock

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Stream translates one converse-stream answer into chat.completion.chunk
// payloads. It reads the answer's frames itself (Frames: the AWS event
// stream, not server-sent events); Event translates the frame Frames
// yielded last. It is created per response and is not safe for
// concurrent use.
type Stream struct {
	opts translate.StreamOptions
	// typ is the event type of the frame being translated; for an
	// exception (or an error message) "exception", with its type in
	// exception and, for an error message, its text in errMessage.
	typ, exception, errMessage string

	id      string
	created int64
	calls   map[int]int // content block index → canonical call index
	// reasoning maps a content block index to its reasoning block in
	// thoughts; open is the block the latest reasoning delta wrote to.
	reasoning map[int]int
	thoughts  []reasoningBlock
	stopped   bool // messageStop was seen
	usage     usage
}

// NewStream returns a Stream. With o.Thoughts it hands on, in the
// gateway's own delta members, what the chat model has no slot for: a
// reasoning block's signature (translate.SignatureMember) and redacted
// content (translate.RedactedMember), as an Anthropic upstream's are.
func NewStream(o translate.StreamOptions) *Stream {
	return &Stream{opts: o, id: "chatcmpl-" + rand.Text(), created: time.Now().Unix(), calls: map[int]int{}, reasoning: map[int]int{}}
}

// reasoningBlock is a reasoning content block as Bedrock wants it back:
// the text with its signature, or the redacted content, byte for byte.
type reasoningBlock struct {
	ReasoningContent struct {
		ReasoningText   *reasoningText `json:"reasoningText,omitempty"`
		RedactedContent string         `json:"redactedContent,omitempty"`
	} `json:"reasoningContent"`
}

// reasoningText is a reasoning block's text and its signature.
type reasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// usage is the Converse API's token count: inputTokens without the
// tokens read from or written to the cache.
type usage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

// openAI is the usage as chat completions report it.
func (u usage) openAI() json.RawMessage {
	return translate.CachedUsage(u.InputTokens, u.CacheReadInputTokens, u.CacheWriteInputTokens, u.OutputTokens)
}

// Frames reads the AWS event stream of r (application/vnd.amazon.eventstream,
// decoded with aws-sdk-go-v2's codec, each frame's checksums checked),
// yielding each frame's payload as an event's Data and its event type as
// its Type. A frame larger than max (its length, read before the frame
// is), a frame that does not decode, or a body cut inside a frame is a
// *wire.StreamError; a clean end between frames ends the sequence, and
// whether the answer was complete is Ended's to say. The context is
// checked before each read and yield, as wire.Events does.
func (s *Stream) Frames(ctx context.Context, r io.Reader, max int) iter.Seq2[wire.Event, error] {
	if max <= 0 {
		max = wire.DefaultMaxEventSize
	}
	return func(yield func(wire.Event, error) bool) {
		br := bufio.NewReaderSize(r, 4<<10) // the codec reads a frame's headers a few bytes at a time
		dec := eventstream.NewDecoder()
		var payload []byte
		for {
			if ctx.Err() != nil {
				yield(wire.Event{}, context.Cause(ctx))
				return
			}
			prelude, err := br.Peek(4)
			switch {
			case err == io.EOF && len(prelude) == 0:
				return
			case err == io.EOF:
				yield(wire.Event{}, &wire.StreamError{Err: io.ErrUnexpectedEOF})
				return
			case err != nil:
				yield(wire.Event{}, &wire.StreamError{Err: err})
				return
			case int64(binary.BigEndian.Uint32(prelude)) > int64(max):
				yield(wire.Event{}, &wire.StreamError{Err: wire.ErrEventTooLarge})
				return
			}
			m, err := dec.Decode(br, payload)
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				yield(wire.Event{}, &wire.StreamError{Err: err})
				return
			}
			payload = m.Payload[:0]
			if ctx.Err() != nil {
				yield(wire.Event{}, context.Cause(ctx))
				return
			}
			data := s.frame(m)
			if !yield(wire.Event{Type: []byte(s.typ), Data: data}, nil) {
				return
			}
		}
	}
}

// frame reads a frame's headers into the stream's typ (and exception):
// :message-type event with its :event-type; exception with its
// :exception-type; error with its :error-code and :error-message. It
// returns the payload to translate, never empty.
func (s *Stream) frame(m eventstream.Message) []byte {
	header := func(name string) string {
		if v := m.Headers.Get(name); v != nil {
			return v.String()
		}
		return ""
	}
	s.typ, s.exception, s.errMessage = header(":event-type"), "", ""
	switch header(":message-type") {
	case "exception":
		s.typ, s.exception = "exception", header(":exception-type")
	case "error":
		s.typ, s.exception, s.errMessage = "exception", header(":error-code"), header(":error-message")
	}
	if len(m.Payload) == 0 {
		return []byte("{}")
	}
	return m.Payload
}

// event is the part of a Converse stream event the translator reads.
type event struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent *struct {
			Text            *string `json:"text"`
			Signature       *string `json:"signature"`
			RedactedContent *string `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string `json:"stopReason"`
	Usage      *usage `json:"usage"`
	Message    string `json:"message"`
}

// Event returns the chunks the frame Frames yielded last becomes (none
// for most): its payload is data. An exception becomes a chunk with an
// error object, which the normalizer ends the stream with. done is never
// set: the usage (metadata) follows messageStop, and the body's end
// closes the stream (Ended).
func (s *Stream) Event(data []byte) (chunks [][]byte, done bool, err error) {
	return s.EventOf(s.typ, data)
}

// EventOf translates an event of type typ ("exception" for an exception,
// its type in exception) whose payload is data.
func (s *Stream) EventOf(typ string, data []byte) (chunks [][]byte, done bool, err error) {
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, false, &wire.ProtocolError{Index: -1, Msg: "a bedrock stream event is not a JSON object: " + wire.Clip(err.Error())}
	}
	switch typ {
	case "messageStart":
		return [][]byte{s.chunk(`{"role":"assistant","content":""}`, "null")}, false, nil
	case "contentBlockStart":
		if ev.Start == nil || ev.Start.ToolUse == nil {
			return nil, false, nil
		}
		k := len(s.calls)
		s.calls[ev.ContentBlockIndex] = k
		u := ev.Start.ToolUse
		return [][]byte{s.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+translate.Quote(u.ToolUseID)+`,"type":"function","function":{"name":`+translate.Quote(u.Name)+`,"arguments":""}}]}`, "null")}, false, nil
	case "contentBlockDelta":
		return s.delta(ev), false, nil
	case "messageStop":
		s.stopped = true
		return [][]byte{s.chunk(`{}`, strconv.Quote(finishReason(ev.StopReason)))}, false, nil
	case "metadata":
		if ev.Usage == nil {
			return nil, false, nil
		}
		s.usage = *ev.Usage
		return [][]byte{translate.Chunks{ID: s.id, Created: s.created}.Usage(s.usage.openAI())}, false, nil
	case "exception":
		msg := ev.Message
		if msg == "" {
			msg = s.errMessage
		}
		return [][]byte{translate.ErrorChunk(msg, s.exception)}, false, nil
	}
	return nil, false, nil // contentBlockStop, and events of later API versions
}

// delta translates a contentBlockDelta: text, a call's input fragment, or
// reasoning (its text, signature or redacted content).
func (s *Stream) delta(ev event) [][]byte {
	d := ev.Delta
	switch {
	case d == nil:
		return nil
	case d.Text != nil:
		return [][]byte{s.chunk(`{"content":`+translate.Quote(*d.Text)+`}`, "null")}
	case d.ToolUse != nil:
		k, ok := s.calls[ev.ContentBlockIndex]
		if !ok || d.ToolUse.Input == "" {
			return nil
		}
		return [][]byte{s.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"function":{"arguments":`+translate.Quote(d.ToolUse.Input)+`}}]}`, "null")}
	case d.ReasoningContent != nil:
		return s.reasoningDelta(ev.ContentBlockIndex, d.ReasoningContent.Text, d.ReasoningContent.Signature, d.ReasoningContent.RedactedContent)
	}
	return nil
}

// reasoningDelta adds to the reasoning block at index what one delta
// says of it.
func (s *Stream) reasoningDelta(index int, text, signature, redacted *string) [][]byte {
	k, ok := s.reasoning[index]
	if !ok {
		k = len(s.thoughts)
		s.reasoning[index] = k
		s.thoughts = append(s.thoughts, reasoningBlock{})
	}
	rc := &s.thoughts[k].ReasoningContent
	switch {
	case redacted != nil:
		rc.RedactedContent += *redacted
		if s.opts.Thoughts {
			return [][]byte{s.chunk(`{"`+translate.RedactedMember+`":`+translate.Quote(*redacted)+`}`, "null")}
		}
	case text != nil || signature != nil:
		if rc.ReasoningText == nil {
			rc.ReasoningText = &reasoningText{}
		}
		if text != nil {
			rc.ReasoningText.Text += *text
			return [][]byte{s.chunk(`{"reasoning_content":`+translate.Quote(*text)+`}`, "null")}
		}
		rc.ReasoningText.Signature += *signature
		if s.opts.Thoughts {
			return [][]byte{s.chunk(`{"`+translate.SignatureMember+`":`+translate.Quote(*signature)+`}`, "null")}
		}
	}
	return nil
}

// finishReason maps a Converse stop reason onto chat completions' finish
// reasons.
func finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, and stop reasons of later API versions
}

// chunk is one chat.completion.chunk of the response.
func (s *Stream) chunk(delta, finish string) []byte {
	return translate.Chunks{ID: s.id, Created: s.created}.Delta(delta, finish)
}

// Ended reports whether messageStop was seen.
func (s *Stream) Ended() bool { return s.stopped }

// Carried returns the answer's reasoning blocks as Bedrock wants them
// back (text with its signature, redacted content, unchanged), a JSON
// array of content blocks, or nil.
func (s *Stream) Carried() []byte {
	if len(s.thoughts) == 0 {
		return nil
	}
	b, _ := json.Marshal(s.thoughts)
	return b
}

// Kinds names no normalization: the Converse stream needs none.
func (s *Stream) Kinds() []string { return nil }
