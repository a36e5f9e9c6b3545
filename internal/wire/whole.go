package wire

import (
	"errors"
	"strings"
)

// Whole normalizes a whole (non-streamed) chat.completion body with the
// same collector and quirk code as a stream: choice 0's calls collected
// and checked (docs/spec.md §2), arguments sent as objects made strings (A12),
// calls spread over several choices folded into choice 0 (A28, with the
// Chunks quirk, for a single-choice request), reasoning moved to the
// client's member (A29, A30), "stop" or no finish reason after calls made
// "tool_calls" (A15), usage read. It returns the body to send — b itself
// when nothing changed — then Result gives what it came to.
//
// A body that is not one JSON document, or that is an error object, is an
// *IncompleteError. Other choices than choice 0 pass unjudged.
func (n *Normalizer) Whole(b []byte) ([]byte, error) {
	if !Valid(b) {
		return nil, &IncompleteError{Upstream: n.opts.Upstream, Err: errors.New("the response is not valid JSON")}
	}
	if n.s == nil {
		n.wake()
	}
	if n.s.top == nil {
		n.s.top = make([]member, 0, smallObject)
	}
	top, err := parseMembers(n.s.top, b)
	if err != nil {
		return b, nil // not an object: no choice, no finish reason, for the judge to refuse
	}
	n.s.top = top
	n.collector.seed = string(lookup(top, "id"))
	n.model = lookup(top, "model")
	if v := lookup(top, "error"); !isNull(v) {
		return nil, n.errorObject(b)
	}
	if u := lookup(top, "usage"); len(u) > 0 && u[0] == '{' {
		n.takeUsage(u)
	}
	choices := lookup(top, "choices")
	if len(choices) == 0 || choices[0] != '[' {
		return b, nil
	}
	var ok bool
	if n.s.elems, ok = n.elements(choices); !ok || len(n.s.elems) == 0 {
		return b, nil
	}
	q := n.opts.Quirks
	var first []byte // choice 0 as it goes out
	first = n.s.elems[0].b
	merged := false
	if len(n.s.elems) > 1 && n.opts.SingleChoice && q.Chunks {
		if m, ok := n.mergeChoices(); ok {
			first, merged = m, true
			n.fix(FixMergedChoices)
		}
	}
	choice, changed, err := n.wholeChoice(first)
	if err != nil {
		n.protocol = err
		return b, nil
	}
	if !changed && !merged {
		return b, nil
	}
	return n.encodeWhole(b, choice, merged), nil
}

// encodeWhole writes the response with choice 0 replaced (and, merged,
// alone).
func (n *Normalizer) encodeWhole(b, choice []byte, merged bool) []byte {
	out := make([]byte, 0, len(b)+64)
	out = append(out, '{')
	for i := range n.s.top {
		if i > 0 {
			out = append(out, ',')
		}
		out = n.s.top[i].appendKey(out)
		out = append(out, ':')
		if n.s.top[i].key != "choices" {
			out = append(out, n.s.top[i].value...)
			continue
		}
		out = append(out, '[')
		out = append(out, choice...)
		if !merged {
			for _, e := range n.s.elems[1:] {
				out = append(out, ',')
				out = append(out, e.b...)
			}
		}
		out = append(out, ']')
	}
	return append(out, '}')
}

// wholeChoice normalizes choice 0 of a whole response and returns it.
func (n *Normalizer) wholeChoice(raw []byte) ([]byte, bool, error) {
	members, err := parseMembers(make([]member, 0, smallObject), raw)
	if err != nil {
		return raw, false, &ProtocolError{Index: -1, Msg: "a choice must be an object"}
	}
	out := raw
	changed := false
	if m := lookup(members, "message"); len(m) > 0 && m[0] == '{' {
		msg, mchanged, err := n.wholeMessage(m)
		if err != nil {
			return raw, false, err
		}
		if mchanged {
			out, _ = SetMember(out, msg, "message")
			changed = true
		}
	}
	reason, _ := stringOf(lookup(members, "finish_reason"))
	if n.opts.Quirks.FinishReason && n.collector.Calls() > 0 && (reason == "stop" || reason == "") {
		n.fix(FixFinishReason)
		reason = "tool_calls"
		out, _ = SetMember(out, []byte(`"tool_calls"`), "finish_reason")
		changed = true
	}
	n.finish = reason
	return out, changed, nil
}

// wholeMessage collects a message's calls, makes object arguments
// strings, moves its reasoning and keeps its text. The message is parsed
// once (twice when its arguments were rewritten).
func (n *Normalizer) wholeMessage(raw []byte) ([]byte, bool, error) {
	members, err := parseMembers(make([]member, 0, smallObject), raw)
	if err != nil {
		return raw, false, nil
	}
	out := raw
	changed := false
	if tc := lookup(members, "tool_calls"); !isNull(tc) {
		objects, ids := n.fixes[FixArgumentsObject], n.fixes[FixMissingID]
		if _, err := n.collector.each(tc, true, func(out1) {}); err != nil {
			return raw, false, err
		}
		if n.fixes[FixArgumentsObject] > objects || n.fixes[FixMissingID] > ids {
			out, _ = SetMember(out, rewriteCalls(tc, n.collector.ids()), "tool_calls")
			changed = true
			members, _ = parseMembers(members[:0], out)
		}
	}
	// Reasoning to the client's member (A29, A30, A31).
	o := Object{members: members}
	blocks := n.opts.Quirks.ContentBlocks && n.flattenWholeContent(&o)
	if n.moveWholeReasoning(&o) || blocks {
		out, changed = o.JSON(), true
	}
	if text, ok := stringOf(lookup(o.members, "content")); ok {
		n.text.WriteString(text)
	}
	if r, ok := stringOf(lookup(o.members, n.out)); ok {
		n.reasoning.WriteString(r)
	}
	return out, changed, nil
}

// moveWholeReasoning puts a message's reasoning in the client's member:
// renamed, or split out of <think> tags in its content. It reports
// whether it changed the message.
func (n *Normalizer) moveWholeReasoning(o *Object) bool {
	switch n.opts.ReasoningIn {
	case ReasoningThink:
		text, ok := stringOf(lookup(o.members, "content"))
		if !ok || text == "" {
			return false
		}
		r, c := n.think.Split(text)
		r2, c2 := n.think.Flush()
		r, c = r+r2, c+c2
		o.Set("content", AppendString(nil, c))
		if r != "" {
			o.Set(n.out, AppendString(nil, r))
		}
		return true
	case ReasoningField, ReasoningContent:
		in := "reasoning_content"
		if n.opts.ReasoningIn == ReasoningField {
			in = "reasoning"
		}
		v, ok := o.Get(in)
		if !ok || in == n.out {
			return false
		}
		o.Delete(in)
		o.Set(n.out, v)
		return true
	}
	return false
}

// mergeChoices folds the tool calls of every choice into the first, for a
// single-choice request answered with one choice per call (docs/quirks.md A28). It
// reports false, changing nothing, when a choice is not of that shape.
func (n *Normalizer) mergeChoices() ([]byte, bool) {
	var calls []byte
	for k, e := range n.s.elems {
		c, err := ParseObject(e.b)
		if err != nil {
			return nil, false
		}
		m, _ := c.Get("message")
		msg, err := ParseObject(m)
		if err != nil {
			return nil, false
		}
		tc, _ := msg.Get("tool_calls")
		elems, ok := Elements(tc)
		if k == 0 && isNull(tc) {
			continue
		}
		if !ok || k > 0 && len(elems) == 0 {
			return nil, false
		}
		for _, call := range elems {
			if len(calls) > 0 {
				calls = append(calls, ',')
			}
			calls = append(calls, call...)
		}
	}
	out, ok := SetMember(n.s.elems[0].b, append(append([]byte{'['}, calls...), ']'), "message", "tool_calls")
	return out, ok
}

// rewriteCalls rewrites a message's tool_calls: arguments given as a JSON
// value other than a string become its text (docs/quirks.md A12) and, with ids
// (the collector's, by position), a call whose id is empty or absent gets
// its made-up one (A07); every other member keeps its bytes.
func rewriteCalls(toolCalls []byte, ids []string) []byte {
	elems, ok := Elements(toolCalls)
	if !ok {
		return toolCalls
	}
	out := []byte{'['}
	for k, call := range elems {
		if k > 0 {
			out = append(out, ',')
		}
		o, err := ParseObject(call)
		if err != nil {
			out = append(out, call...)
			continue
		}
		if id, _ := o.Get("id"); k < len(ids) && (len(id) == 0 || string(id) == `""` || string(id) == "null") {
			call, _ = SetMember(call, AppendString(nil, ids[k]), "id")
		}
		fn, _ := o.Get("function")
		f, ferr := ParseObject(fn)
		a, _ := f.Get("arguments")
		if ferr != nil || len(a) == 0 || a[0] == '"' || string(a) == "null" {
			out = append(out, call...)
			continue
		}
		set, _ := SetMember(call, AppendString(nil, strings.Clone(string(a))), "function", "arguments")
		out = append(out, set...)
	}
	return append(out, ']')
}
