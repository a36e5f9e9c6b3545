package wire

import (
	"bytes"
	"strconv"
)

// The normalizer's tail: what ends a response (the held finish, a
// synthesized one, the usage chunk), and what it came to.

// Finished says how a stream ended, for the judge: Done is whether it is
// complete (its [DONE], a finish reason from an upstream that sends no
// [DONE], or the text limit reached).
type Finished struct {
	Done bool
	// Tail holds the chunks to send after the response is judged
	// acceptable, after Flush's: the text a <think> splitter still held, a
	// synthesized finish reason (A17), the usage chunk (A22).
	Tail [][]byte
}

// Finish ends a stream that reached its end (sawDone: its [DONE]) or a
// clean EOF, and returns what the caller needs to judge and end it.
func (n *Normalizer) Finish(sawDone bool) Finished {
	f := Finished{Done: sawDone || n.cut}
	q := n.opts.Quirks
	if !f.Done && n.finish != "" && q.NoDone {
		f.Done = true // docs/quirks.md A21: this upstream ends with a finish reason and no [DONE]
		n.fix(FixNoDone)
	}
	if t := n.thinkTail(); t != nil {
		f.Tail = append(f.Tail, t)
	}
	if f.Done {
		f.Tail = append(f.Tail, n.heldFinishChunks()...)
	}
	if f.Done && !n.cut && n.finish == "" && q.MissingFinishReason {
		f.Tail = append(f.Tail, n.finishChunk())
	}
	if n.opts.ClientUsage && n.hold { // made only for a client that asked for it
		if u := n.UsageChunk(); u != nil {
			f.Tail = append(f.Tail, u) // once, last, as OpenAI sends it (docs/quirks.md A22, A25)
		}
	}
	return f
}

// Cut reports whether the text limit was reached: the caller ends the
// stream there, with LengthChunk when no finish reason went out.
func (n *Normalizer) Cut() bool { return n.cut }

// Result is what a response came to, for the judge and the record.
type Result struct {
	Calls    []CollectedCall
	CallsErr error // the collector's *ProtocolError, if any
	// FinishReason is choice 0's finish reason after normalization.
	FinishReason string
	// Text and Reasoning are choice 0's, kept with Options.KeepText.
	Text, Reasoning string
	Usage           Usage
	UsageSeen       bool
	Fixes           Fixes
}

// Result returns what the response came to so far; protocol is the
// error a chunk ended the response with, if any (it wins over the
// collector's).
func (n *Normalizer) Result(protocol error) Result {
	r := Result{FinishReason: n.finish, Text: n.text.String(), Reasoning: n.reasoning.String(),
		Usage: n.usage, UsageSeen: n.usageSeen, Fixes: n.fixes}
	r.Calls, r.CallsErr = n.collector.Finish()
	if protocol == nil {
		protocol = n.protocol
	}
	if protocol != nil {
		r.CallsErr = protocol
	}
	return r
}

// Fixes returns the normalizations applied so far.
func (n *Normalizer) Fixes() Fixes { return n.fixes }

// FirstChunks is, for each normalization applied, the upstream chunk at
// which it was first applied.
func (n *Normalizer) FirstChunks() FixChunks { return n.first }

// fix counts a normalization applied to the chunk being read.
func (n *Normalizer) fix(f Fix) { n.fixN(f, 1) }

// fixN counts k applications of a normalization to the chunk being read.
func (n *Normalizer) fixN(f Fix, k int) {
	if n.fixes[f] == 0 && k > 0 {
		n.first[f] = n.read
	}
	n.fixes[f] += k
}

// Usage is the usage reported so far, and FinishReason choice 0's finish
// reason: what Result says of them, without collecting the calls.
func (n *Normalizer) Usage() Usage         { return n.usage }
func (n *Normalizer) FinishReason() string { return n.finish }

// Flush returns, in Buffer mode, the chunks held back: one chunk carrying
// every call whole, then the finishing chunk(s). Call it once the response
// has been judged acceptable; it returns nothing when nothing is held.
func (n *Normalizer) Flush() [][]byte {
	if n.flushed || len(n.pending) == 0 && len(n.final) == 0 {
		return nil
	}
	n.flushed = true
	var out [][]byte
	if len(n.pending) > 0 {
		calls := []byte{'['}
		for k, p := range n.pending {
			if k > 0 {
				calls = append(calls, ',')
			}
			calls = out1{index: k, id: p.id, name: p.name, args: AppendString(nil, string(p.args)), extra: p.extra}.append(calls)
		}
		calls = append(calls, ']')
		out = append(out, n.made(`[{"index":0,"delta":{"tool_calls":`+string(calls)+`},"finish_reason":null}]`))
	}
	return append(out, n.final...)
}

// made is a chunk the Normalizer makes: the first chunk's id, object,
// created and model, then choices.
func (n *Normalizer) made(choices string) []byte {
	return append(append(n.madeHead(len(choices)), choices...), '}')
}

// madeHead starts a chunk the Normalizer makes, up to its choices, in a
// buffer with room for more bytes of choices and the closing brace.
func (n *Normalizer) madeHead(more int) []byte {
	b := make([]byte, 0, len(n.head)+more+16)
	b = append(b, '{')
	b = append(b, n.head...)
	if len(n.head) > 0 {
		b = append(b, ',')
	}
	return append(b, `"choices":`...)
}

// LengthChunk returns a chunk that ends choice 0 with finish_reason
// "length", for a stream cut at its output budget.
func (n *Normalizer) LengthChunk() []byte {
	n.finish = "length"
	return n.made(`[{"index":0,"delta":{},"finish_reason":"length"}]`)
}

// finishChunk is the finish reason for an upstream that ended with [DONE]
// but never sent one (A17): "tool_calls" when calls were made, else
// "stop".
func (n *Normalizer) finishChunk() []byte {
	reason := "stop"
	if n.collector.Calls() > 0 {
		reason = "tool_calls"
	}
	n.finish = reason
	n.fix(FixMissingFinishReason)
	return n.made(`[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]`)
}

// thinkTail is a chunk with the text the <think> splitter still holds at
// the end of a stream, or nil.
func (n *Normalizer) thinkTail() []byte {
	r, c := n.think.Flush()
	if r == "" && c == "" {
		return nil
	}
	d := []byte{'{'}
	if c != "" {
		d = append(d, `"content":`...)
		d = AppendString(d, c)
	}
	if r != "" {
		if len(d) > 1 {
			d = append(d, ',')
		}
		d = AppendString(d, n.out)
		d = append(d, ':')
		d = AppendString(d, r)
	}
	d = append(d, '}')
	return n.made(`[{"index":0,"delta":` + string(d) + `,"finish_reason":null}]`)
}

// UsageChunk returns the one usage chunk to send at the end of a stream
// whose usage was held, nil when the upstream reported none: the last
// usage object the upstream sent, its token counts the largest reported,
// with "choices": [] (what OpenAI sends for stream_options.include_usage).
func (n *Normalizer) UsageChunk() []byte {
	if !n.usageSeen {
		return nil
	}
	u, _ := ParseObject(bytes.Clone(n.usageRaw))
	u.Set("prompt_tokens", strconv.AppendInt(nil, n.usage.PromptTokens, 10))
	u.Set("completion_tokens", strconv.AppendInt(nil, n.usage.CompletionTokens, 10))
	u.Set("total_tokens", strconv.AppendInt(nil, n.usage.TotalTokens, 10))
	b := n.made(`[]`)
	b = append(b[:len(b)-1], `,"usage":`...)
	b = append(b, u.JSON()...)
	return append(b, '}')
}

// view returns s's bytes without copying; they must not be modified.
