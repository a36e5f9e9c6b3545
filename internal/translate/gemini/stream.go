package gemini

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// answer is the part of a GenerateContentResponse the translator reads.
type answer struct {
	Candidates []struct {
		Content struct {
			Parts []answerPart `json:"parts"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		FinishMessage string `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *usage `json:"usageMetadata"`
	ModelVersion  string `json:"modelVersion"`
	ResponseID    string `json:"responseId"`
	Error         *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

type answerPart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature string `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

// usage is Gemini's usageMetadata.
type usage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
}

// openAI is the usage as chat completions report it: the answer's tokens
// count its thoughts (reasoning_tokens), the prompt its cached tokens.
func (u usage) openAI() json.RawMessage {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	b, _ := json.Marshal(map[string]any{
		"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details":     map[string]int64{"cached_tokens": u.CachedContentTokenCount},
		"completion_tokens_details": map[string]int64{"reasoning_tokens": u.ThoughtsTokenCount},
	})
	return b
}

// Stream translates one streamed Gemini answer (streamGenerateContent with
// alt=sse: a GenerateContentResponse per event, no end marker) into
// chat.completion.chunk payloads. It is created per response and is not
// safe for concurrent use.
type Stream struct {
	id, model string
	seed      string // what synthesized call ids derive from: the response's id
	created   int64
	started   bool
	calls     int
	sigs      Signatures
	finished  bool // a finishReason was seen
	usage     *usage
	usageSent bool
	kinds     []string
}

// NewStream returns a Stream.
func NewStream() *Stream { return &Stream{} }

// Event returns the chunks one event becomes. Gemini's stream has no end
// marker: done is never reported, and Ended says whether a finishReason
// was seen when the body ended. An error object becomes a chunk with an
// error, which the normalizer ends the stream with.
func (s *Stream) Event(data []byte) ([][]byte, bool, error) {
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, false, &wire.ProtocolError{Index: -1, Msg: "a gemini stream event is not a GenerateContentResponse: " + wire.Clip(err.Error())}
	}
	if a.Error != nil {
		return [][]byte{translate.ErrorChunk(a.Error.Message, a.Error.Status)}, false, nil
	}
	var out [][]byte
	if !s.started {
		s.started, s.created = true, time.Now().Unix()
		s.id, s.model, s.seed = "chatcmpl-"+a.ResponseID, a.ModelVersion, seed(a.ResponseID)
		out = append(out, s.chunk(`{"role":"assistant","content":""}`, "null"))
	}
	if a.UsageMetadata != nil {
		s.usage = a.UsageMetadata
	}
	if len(a.Candidates) == 0 {
		if a.PromptFeedback != nil && a.PromptFeedback.BlockReason != "" && !s.finished {
			s.finished = true
			out = append(out, s.chunk(`{}`, `"content_filter"`))
		}
		return s.withUsage(out), false, nil
	}
	c := a.Candidates[0]
	for _, p := range c.Content.Parts {
		out = append(out, s.part(p)...)
	}
	if c.FinishReason != "" && !s.finished {
		s.finished = true
		reason, failed := finishReason(c.FinishReason, s.calls > 0)
		if failed {
			return append(out, translate.ErrorChunk(finishError(c.FinishReason, c.FinishMessage), c.FinishReason)), false, nil
		}
		out = append(out, s.chunk(`{}`, strconv.Quote(reason)))
	}
	return s.withUsage(out), false, nil
}

// part translates one part: thought text to reasoning, text to content, a
// function call to one complete tool call. Signatures are kept for
// Carried; a call's goes to the client too, where Gemini's
// OpenAI-compatible endpoint puts it (extra_content.google).
func (s *Stream) part(p answerPart) [][]byte {
	switch {
	case p.FunctionCall != nil:
		id := p.FunctionCall.ID
		if id == "" {
			id = callID(s.seed, s.calls, p.FunctionCall.Name)
			s.kinds = append(s.kinds, "missing_id")
		}
		args := "{}"
		if len(p.FunctionCall.Args) > 0 && string(p.FunctionCall.Args) != "null" {
			args = string(p.FunctionCall.Args)
		}
		extra := ""
		if p.ThoughtSignature != "" {
			if s.sigs.Calls == nil {
				s.sigs.Calls = map[string]string{}
			}
			s.sigs.Calls[id] = p.ThoughtSignature
			extra = `,"extra_content":{"google":{"thought_signature":` + translate.Quote(p.ThoughtSignature) + `}}`
		}
		k := s.calls
		s.calls++
		return [][]byte{s.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+translate.Quote(id)+`,"type":"function","function":{"name":`+
			translate.Quote(p.FunctionCall.Name)+`,"arguments":`+translate.Quote(args)+`}`+extra+`}]}`, "null")}
	case p.Thought:
		if p.Text != "" {
			return [][]byte{s.chunk(`{"reasoning_content":`+translate.Quote(p.Text)+`}`, "null")}
		}
	default:
		if p.ThoughtSignature != "" {
			s.sigs.Text = p.ThoughtSignature
		}
		if p.Text != "" {
			return [][]byte{s.chunk(`{"content":`+translate.Quote(p.Text)+`}`, "null")}
		}
	}
	return nil
}

// withUsage adds the usage chunk once the answer has finished and its
// usage is known.
func (s *Stream) withUsage(out [][]byte) [][]byte {
	if s.finished && s.usage != nil && !s.usageSent {
		s.usageSent = true
		out = append(out, translate.Chunks{ID: s.id, Model: s.model, Created: s.created}.Usage(s.usage.openAI()))
	}
	return out
}

// Ended reports whether a finishReason was seen: a stream that ends
// without one was cut.
func (s *Stream) Ended() bool { return s.finished }

// Carried returns the answer's thought signatures (a JSON Signatures), or
// nil when it had none.
func (s *Stream) Carried() []byte { return s.sigs.encode() }

// Kinds names the normalizations made: "missing_id" for each call Gemini
// gave no id.
func (s *Stream) Kinds() []string { return s.kinds }

func (g Signatures) encode() []byte {
	if g.Text == "" && len(g.Calls) == 0 {
		return nil
	}
	b, _ := json.Marshal(g)
	return b
}

// chunk is one chat.completion.chunk of the response.
func (s *Stream) chunk(delta, finish string) []byte {
	return translate.Chunks{ID: s.id, Model: s.model, Created: s.created}.Delta(delta, finish)
}

// finishReason maps Gemini's finishReason onto chat completions': failed
// for the reasons that say the answer is unusable.
func finishReason(reason string, calls bool) (string, bool) {
	switch reason {
	case "STOP":
		if calls {
			return "tool_calls", false
		}
		return "stop", false
	case "MAX_TOKENS":
		return "length", false
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return "content_filter", false
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS":
		return "", true
	}
	if calls {
		return "tool_calls", false
	}
	return "stop", false // OTHER, and reasons of later API versions
}

func finishError(reason, message string) string {
	if message != "" {
		return "the model's answer failed (" + reason + "): " + message
	}
	return "the model's answer failed (" + reason + ")"
}

// seed is what a response's synthesized call ids derive from: its id, or
// random bytes when it has none (ids must not repeat across answers: the
// gateway remembers each call's signature by its id).
func seed(responseID string) string {
	if responseID != "" {
		return responseID
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return string(b[:])
}

// callID makes the id of a call Gemini gave none: "call_" and 24 letters
// and digits from the response's id and the call's position (the same
// answer gets the same ids).
func callID(seed string, k int, name string) string {
	h := sha256.Sum256([]byte(seed + "\x00" + strconv.Itoa(k) + "\x00" + name))
	id := make([]byte, 0, 29)
	id = append(id, "call_"...)
	for _, b := range h[:24] {
		id = append(id, base62[int(b)%len(base62)])
	}
	return string(id)
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var _ translate.Events = (*Stream)(nil)
