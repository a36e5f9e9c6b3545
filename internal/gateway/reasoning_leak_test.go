package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// A leak script: the pieces of one answer, in order, each reasoning or
// answer text, and how an OpenAI-compatible upstream spells the member
// a chunk does not use (absent, null or "", which DeepSeek sends).
type leakScript struct {
	pieces []leakPiece
	other  string // the unused member's spelling: "", "null" or `""`
}

type leakPiece struct {
	reasoning bool
	text      string
	both      bool // an answer piece sent in the same chunk as the reasoning before it
}

// script makes case n's answer: reasoning and answer pieces in a random
// order (reasoning first more often, as models do), the two texts
// distinguishable word by word.
func script(n int) leakScript {
	r := rand.New(rand.NewPCG(uint64(n), 28))
	s := leakScript{other: []string{"", "null", `""`}[r.IntN(3)]}
	for i := range 2 + r.IntN(6) {
		p := leakPiece{reasoning: r.IntN(3) > 0 && i < 4}
		if p.reasoning {
			p.text = fmt.Sprintf("think%d ", i)
		} else {
			p.text = fmt.Sprintf("say%d ", i)
			p.both = i > 0 && s.pieces[i-1].reasoning && r.IntN(2) == 0
		}
		s.pieces = append(s.pieces, p)
	}
	if !s.hasAnswer() {
		s.pieces = append(s.pieces, leakPiece{text: "say9 "})
	}
	return s
}

func (s leakScript) hasAnswer() bool {
	for _, p := range s.pieces {
		if !p.reasoning {
			return true
		}
	}
	return false
}

// want is the answer text and the reasoning text the client must see.
func (s leakScript) want() (answer, reasoning string) {
	var a, r strings.Builder
	for _, p := range s.pieces {
		if p.reasoning {
			r.WriteString(p.text)
		} else {
			a.WriteString(p.text)
		}
	}
	return a.String(), r.String()
}

// member writes `"key":value` for a text, or the unused member as the
// script spells it.
func member(key, text string, used bool, other string) string {
	if used {
		q, _ := json.Marshal(text)
		return `"` + key + `":` + string(q)
	}
	if other == "" {
		return ""
	}
	return `"` + key + `":` + other
}

func join(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ",")
}

// openaiStream is the script as a DeepSeek-style chat completions stream.
func (s leakScript) openaiStream() string {
	var b strings.Builder
	chunk := func(delta, finish string) {
		fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{%s},"finish_reason":%s}]}`+"\n\n", delta, finish)
	}
	chunk(`"role":"assistant"`, "null")
	for i := 0; i < len(s.pieces); i++ {
		p := s.pieces[i]
		if i+1 < len(s.pieces) && s.pieces[i+1].both {
			chunk(join(member("reasoning_content", p.text, true, ""), member("content", s.pieces[i+1].text, true, "")), "null")
			i++
			continue
		}
		chunk(join(member("reasoning_content", p.text, p.reasoning, s.other), member("content", p.text, !p.reasoning, s.other)), "null")
	}
	chunk(member("content", "", false, s.other), `"stop"`)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// openaiWhole is the script as a whole chat completion.
func (s leakScript) openaiWhole() string {
	answer, reasoning := s.want()
	msg := join(`"role":"assistant"`, member("content", answer, answer != "", s.other), member("reasoning_content", reasoning, reasoning != "", s.other))
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{` + msg + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
}

// anthropicStream is the script as a Messages API stream: one block per
// run of pieces of one kind.
func (s leakScript) anthropicStream() string {
	var b strings.Builder
	ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`)
	block := -1
	for i, p := range s.pieces {
		if i == 0 || p.reasoning != s.pieces[i-1].reasoning {
			if block >= 0 {
				if s.pieces[i-1].reasoning {
					ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":"sig"}}`, block))
				}
				ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, block))
			}
			block++
			kind := map[bool]string{true: `{"type":"thinking","thinking":""}`, false: `{"type":"text","text":""}`}[p.reasoning]
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, block, kind))
		}
		q, _ := json.Marshal(p.text)
		if p.reasoning {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, block, q))
		} else {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, block, q))
		}
	}
	ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, block))
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.String()
}

// anthropicWhole is the script as a whole Messages API answer.
func (s leakScript) anthropicWhole() string {
	var blocks []string
	for i, p := range s.pieces {
		q, _ := json.Marshal(p.text)
		switch {
		case i > 0 && p.reasoning == s.pieces[i-1].reasoning:
			last := blocks[len(blocks)-1]
			var prev string
			key := map[bool]string{true: "thinking", false: "text"}[p.reasoning]
			var m map[string]any
			_ = json.Unmarshal([]byte(last), &m)
			prev, _ = m[key].(string)
			m[key] = prev + p.text
			b, _ := json.Marshal(m)
			blocks[len(blocks)-1] = string(b)
		case p.reasoning:
			blocks = append(blocks, `{"type":"thinking","thinking":`+string(q)+`,"signature":"sig"}`)
		default:
			blocks = append(blocks, `{"type":"text","text":`+string(q)+`}`)
		}
	}
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` + strings.Join(blocks, ",") +
		`],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":5}}`
}

// runs groups the pieces into runs of one kind, in order.
func (s leakScript) runs() [][]leakPiece {
	var out [][]leakPiece
	for i, p := range s.pieces {
		if i == 0 || p.reasoning != s.pieces[i-1].reasoning {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], p)
	}
	return out
}

// geminiPart is a piece as a Gemini part.
func geminiPart(p leakPiece) string {
	q, _ := json.Marshal(p.text)
	if p.reasoning {
		return `{"text":` + string(q) + `,"thought":true}`
	}
	return `{"text":` + string(q) + `}`
}

// geminiStream is the script as a Gemini stream: one part per event, the
// finish last.
func (s leakScript) geminiStream() string {
	var b strings.Builder
	for _, p := range s.pieces {
		b.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[` + geminiPart(p) + `]}}],"responseId":"r"}` + "\r\n\r\n")
	}
	b.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1},"responseId":"r"}` + "\r\n\r\n")
	return b.String()
}

// geminiWhole is the script as a whole Gemini answer.
func (s leakScript) geminiWhole() string {
	var parts []string
	for _, p := range s.pieces {
		parts = append(parts, geminiPart(p))
	}
	return `{"candidates":[{"content":{"role":"model","parts":[` + strings.Join(parts, ",") + `]},"finishReason":"STOP"}],"responseId":"r"}`
}

// responsesItems is the script as Responses output items: a reasoning
// item per run of reasoning, a message per run of text.
func (s leakScript) responsesItems() []string {
	var items []string
	for k, run := range s.runs() {
		var text strings.Builder
		for _, p := range run {
			text.WriteString(p.text)
		}
		q, _ := json.Marshal(text.String())
		if run[0].reasoning {
			items = append(items, fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":%s}]}`, k, q))
		} else {
			items = append(items, fmt.Sprintf(`{"type":"message","id":"msg_%d","role":"assistant","content":[{"type":"output_text","text":%s}]}`, k, q))
		}
	}
	return items
}

// responsesStream is the script as a Responses stream.
func (s leakScript) responsesStream() string {
	var b strings.Builder
	ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,%s}\n\n", typ, typ, data) }
	ev("response.created", `"response":{"id":"resp_1","model":"m","status":"in_progress"}`)
	for _, p := range s.pieces {
		q, _ := json.Marshal(p.text)
		if p.reasoning {
			ev("response.reasoning_summary_text.delta", `"delta":`+string(q))
		} else {
			ev("response.output_text.delta", `"delta":`+string(q))
		}
	}
	ev("response.completed", `"response":{"id":"resp_1","status":"completed","output":[`+strings.Join(s.responsesItems(), ",")+`]}`)
	return b.String()
}

// responsesWhole is the script as a whole Responses answer.
func (s leakScript) responsesWhole() string {
	return `{"id":"resp_1","object":"response","model":"m","status":"completed","output":[` + strings.Join(s.responsesItems(), ",") + `]}`
}

// leakUpstream answers as the upstream protocol its path says, the case
// its model names ("case-17").
func leakUpstream(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		model, gemini := req.Model, strings.Contains(r.URL.Path, "/models/")
		if gemini { // the model and the streaming are in the path
			model, req.Stream = r.URL.Path, strings.Contains(r.URL.Path, ":streamGenerateContent")
		}
		_, num, _ := strings.Cut(model, "case-")
		num, _, _ = strings.Cut(num, ":")
		n, err := strconv.Atoi(num)
		if err != nil {
			http.Error(w, "unknown model "+model, 404)
			return
		}
		s := script(n)
		var stream, whole func() string
		switch {
		case strings.HasSuffix(r.URL.Path, "/messages"):
			stream, whole = s.anthropicStream, s.anthropicWhole
		case gemini:
			stream, whole = s.geminiStream, s.geminiWhole
		case strings.HasSuffix(r.URL.Path, "/responses"):
			stream, whole = s.responsesStream, s.responsesWhole
		default:
			stream, whole = s.openaiStream, s.openaiWhole
		}
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(stream()))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(whole()))
	}))
}

// What a client API showed of one answer: its answer text and its
// reasoning text.
type shown struct{ answer, reasoning string }

// The client APIs, each read with openai-go, streamed and whole.
var leakClients = map[string]func(t *testing.T, c *openai.Client, model string) shown{
	"chat/stream": func(t *testing.T, c *openai.Client, model string) shown {
		stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: model, Messages: gatewaytest.UserMsg("hi")})
		var s shown
		for stream.Next() {
			for _, ch := range stream.Current().Choices {
				s.answer += ch.Delta.Content
				s.reasoning += rawText(ch.Delta.JSON.ExtraFields["reasoning_content"].Raw())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		return s
	},
	"chat/whole": func(t *testing.T, c *openai.Client, model string) shown {
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: model, Messages: gatewaytest.UserMsg("hi")})
		if err != nil {
			t.Fatal(err)
		}
		m := resp.Choices[0].Message
		return shown{answer: m.Content, reasoning: rawText(m.JSON.ExtraFields["reasoning_content"].Raw())}
	},
	"responses/stream": func(t *testing.T, c *openai.Client, model string) shown {
		stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: model, Input: input("hi")})
		var s shown
		for stream.Next() {
			switch ev := stream.Current(); ev.Type {
			case "response.output_text.delta":
				s.answer += ev.Delta
			case "response.reasoning_summary_text.delta":
				s.reasoning += ev.Delta
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		return s
	},
	"responses/whole": func(t *testing.T, c *openai.Client, model string) shown {
		resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: model, Input: input("hi")})
		if err != nil {
			t.Fatal(err)
		}
		s := shown{answer: resp.OutputText()}
		for _, it := range resp.Output {
			if it.Type == "reasoning" {
				for _, sum := range it.Summary {
					s.reasoning += sum.Text
				}
			}
		}
		return s
	},
}

// rawText decodes a raw JSON string member ("" for absent or null).
func rawText(raw string) string {
	var s string
	_ = json.Unmarshal([]byte(raw), &s)
	return s
}

// The reasoning of a model is never shown as its answer: for every client
// API × upstream protocol pair, on answers whose chunks carry reasoning
// with "content" absent, null or "" (and the answer with the reasoning
// member absent, null or ""), and chunks that carry both, the client's
// answer text is exactly the answer and its reasoning exactly the
// reasoning, in the member its API carries reasoning in.
func TestReasoningNeverAnswer(t *testing.T) {
	up := leakUpstream(t)
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, `
upstreams:
  - {name: compat, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: gemini, protocol: gemini, url: "UPSTREAM_URL/v1beta"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
routes:
  - {name: openai, model: "openai/*", upstream: compat}
  - {name: anthropic, model: "anthropic/*", upstream: claude}
  - {name: gemini, model: "gemini/*", upstream: gemini}
  - {name: responses, model: "responses/*", upstream: oai}
`)
	c := e.Client("k")
	for _, upstream := range []string{"openai", "anthropic", "gemini", "responses"} {
		for api, read := range leakClients {
			t.Run(upstream+"/"+api, func(t *testing.T) {
				for n := range 24 {
					s := script(n)
					got := read(t, c, fmt.Sprintf("%s/case-%d", upstream, n))
					answer, reasoning := s.want()
					if got.answer != answer || got.reasoning != reasoning {
						t.Fatalf("case %d (other member %q): answer %q, reasoning %q; want %q, %q\n%s",
							n, s.other, got.answer, got.reasoning, answer, reasoning, s.openaiStream())
					}
				}
			})
		}
	}
}
