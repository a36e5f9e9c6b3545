package responses

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// EventSink is where a Stream's events go: one SSE event each, with its
// event name.
type EventSink interface {
	SendEvent(event string, data []byte) error
}

// Stream turns a normalized chat completion stream, chunk by chunk, into
// the Responses API's events. It is created per response and is not safe
// for concurrent use.
type Stream struct {
	meta    Meta
	sink    EventSink
	seq     int
	started bool
	items   []*openItem // every item, by output index
	cur     *openItem   // the message or reasoning item being written
	calls   map[int]*openItem
	itemIDs map[string]string // a call_id → the upstream's item id for its function_call
	tally   translate.Tally
	ended   bool
	// completed: the response ended as completed or incomplete (not
	// failed); final is then its response object.
	completed bool
	final     []byte
}

type openItem struct {
	kind, id       string
	index          int
	text           strings.Builder
	callID, name   string
	done           bool
	finishedObject json.RawMessage
	upstream       json.RawMessage // a reasoning or message item as the upstream finished it (reasoning sealed), or nil
}

// NewStream returns a Stream writing to sink.
func NewStream(m Meta, sink EventSink) *Stream {
	return &Stream{meta: m, sink: sink, calls: map[int]*openItem{}}
}

// event sends one event: its type and sequence number, then v's members.
func (s *Stream) event(typ string, v map[string]any) error {
	v["type"], v["sequence_number"] = typ, s.seq
	s.seq++
	b, _ := json.Marshal(v)
	return s.sink.SendEvent(typ, b)
}

func (s *Stream) start() error {
	if s.started {
		return nil
	}
	s.started = true
	if err := s.event("response.created", map[string]any{"response": s.meta.object("in_progress", nil, nil, nil)}); err != nil {
		return err
	}
	return s.event("response.in_progress", map[string]any{"response": s.meta.object("in_progress", nil, nil, nil)})
}

// Chunk sends the events one chat chunk makes.
func (s *Stream) Chunk(data []byte) error {
	return s.tally.Chunk(data, s.start, s.delta)
}

// delta sends the events of one choice's delta. Each member is decoded on
// its own (translate.ReadDelta): a member absent, null or "" says nothing,
// and never repeats what another member said.
func (s *Stream) delta(d map[string]json.RawMessage) error {
	if err := s.upstreamItems(d); err != nil {
		return err
	}
	said := translate.ReadDelta(d, s.meta.ReasoningField)
	if said.Reasoning != "" {
		if err := s.textDelta("reasoning", said.Reasoning); err != nil {
			return err
		}
	}
	if raw := d[translate.ReasoningItemMember]; len(raw) > 0 && raw[0] == '{' {
		return s.reasoningDone(raw)
	}
	if raw := d[translate.OutputItemMember]; len(raw) > 0 && raw[0] == '{' {
		return s.itemDone(raw)
	}
	if said.Text != "" {
		if err := s.textDelta("message", said.Text); err != nil {
			return err
		}
	}
	for _, tc := range said.Calls {
		if err := s.callDelta(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// upstreamItems reads what a Responses upstream hands on about its items:
// a reasoning item starting (opened with the upstream's id, so that the
// client can send it back), and the item id of a function call to come.
func (s *Stream) upstreamItems(d map[string]json.RawMessage) error {
	if raw, ok := d[translate.CallItemMember]; ok {
		var c struct {
			CallID string `json:"call_id"`
			ID     string `json:"id"`
		}
		if json.Unmarshal(raw, &c) == nil && c.CallID != "" && c.ID != "" {
			if s.itemIDs == nil {
				s.itemIDs = map[string]string{}
			}
			s.itemIDs[c.CallID] = c.ID
		}
	}
	var id string
	if raw, ok := d[translate.MessageIDMember]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
		if err := s.closeCurrent(); err != nil {
			return err
		}
		return s.openMessage(id)
	}
	if raw, ok := d[translate.ReasoningIDMember]; !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return nil
	}
	if err := s.closeCurrent(); err != nil {
		return err
	}
	return s.openReasoning(id)
}

// itemDone takes an item the upstream finished that the chat model has no
// slot for: the message being written, with its annotations (when it says
// what was streamed), or another item (a hosted tool's call), whole.
func (s *Stream) itemDone(raw json.RawMessage) error {
	var it item
	if json.Unmarshal(raw, &it) != nil {
		return nil
	}
	if it.Type == "message" {
		if cur := s.cur; cur != nil && cur.kind == "message" && cur.id == it.ID {
			var text strings.Builder
			if assistantText(&text, it.Content, 0) == nil && text.String() == cur.text.String() {
				cur.upstream = raw
			}
			return s.closeCurrent()
		}
		return nil
	}
	if err := s.closeCurrent(); err != nil {
		return err
	}
	if it.ID == "" {
		return nil
	}
	added := s.add(it.Type, it.ID)
	added.done, added.finishedObject = true, raw
	if err := s.event("response.output_item.added", map[string]any{"output_index": added.index, "item": raw}); err != nil {
		return err
	}
	return s.event("response.output_item.done", map[string]any{"output_index": added.index, "item": raw})
}

// reasoningDone ends the reasoning item with the upstream's finished item
// (its encrypted content sealed): the open one, or a new one.
func (s *Stream) reasoningDone(item json.RawMessage) error {
	if s.cur == nil || s.cur.kind != "reasoning" {
		if err := s.closeCurrent(); err != nil {
			return err
		}
		var it struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(item, &it)
		if it.ID == "" {
			it.ID = NewID("rs")
		}
		if err := s.openReasoning(it.ID); err != nil {
			return err
		}
	}
	s.cur.upstream = item
	return s.closeCurrent()
}

// add opens a new output item.
func (s *Stream) add(kind, id string) *openItem {
	it := &openItem{kind: kind, id: id, index: len(s.items)}
	s.items = append(s.items, it)
	return it
}

// textDelta writes text to the current message or reasoning item, opening
// one (and closing the other) as needed.
func (s *Stream) textDelta(kind, text string) error {
	if s.cur == nil || s.cur.kind != kind {
		if err := s.closeCurrent(); err != nil {
			return err
		}
		if err := s.open(kind); err != nil {
			return err
		}
	}
	it := s.cur
	it.text.WriteString(text)
	if kind == "reasoning" {
		return s.event("response.reasoning_summary_text.delta", map[string]any{"item_id": it.id, "output_index": it.index, "summary_index": 0, "delta": text})
	}
	return s.event("response.output_text.delta", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "delta": text, "logprobs": []any{}})
}

func (s *Stream) open(kind string) error {
	if kind == "reasoning" {
		return s.openReasoning(NewID("rs"))
	}
	return s.openMessage(NewID("msg"))
}

// openMessage opens a message item with its text part.
func (s *Stream) openMessage(id string) error {
	it := s.add("message", id)
	s.cur = it
	if err := s.event("response.output_item.added", map[string]any{"output_index": it.index, "item": json.RawMessage(messageItem(it.id, "in_progress", ""))}); err != nil {
		return err
	}
	return s.event("response.content_part.added", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "part": textPart("")})
}

// openReasoning opens a reasoning item with its summary part.
func (s *Stream) openReasoning(id string) error {
	it := s.add("reasoning", id)
	s.cur = it
	if err := s.event("response.output_item.added", map[string]any{"output_index": it.index, "item": map[string]any{"type": "reasoning", "id": it.id, "summary": []any{}}}); err != nil {
		return err
	}
	return s.event("response.reasoning_summary_part.added", map[string]any{"item_id": it.id, "output_index": it.index, "summary_index": 0, "part": map[string]string{"type": "summary_text", "text": ""}})
}

// closeCurrent ends the current message or reasoning item.
func (s *Stream) closeCurrent() error {
	it := s.cur
	if it == nil {
		return nil
	}
	s.cur, it.done = nil, true
	text := it.text.String()
	if it.kind == "reasoning" {
		it.finishedObject = reasoningItem(it.id, text)
		if it.upstream != nil {
			it.finishedObject = it.upstream
		}
		for _, e := range []struct {
			typ string
			v   map[string]any
		}{
			{"response.reasoning_summary_text.done", map[string]any{"item_id": it.id, "output_index": it.index, "summary_index": 0, "text": text}},
			{"response.reasoning_summary_part.done", map[string]any{"item_id": it.id, "output_index": it.index, "summary_index": 0, "part": map[string]string{"type": "summary_text", "text": text}}},
			{"response.output_item.done", map[string]any{"output_index": it.index, "item": it.finishedObject}},
		} {
			if err := s.event(e.typ, e.v); err != nil {
				return err
			}
		}
		return nil
	}
	it.finishedObject = messageItem(it.id, "completed", text)
	if it.upstream != nil {
		it.finishedObject = it.upstream // its annotations, as the upstream sent them
	}
	for _, e := range []struct {
		typ string
		v   map[string]any
	}{
		{"response.output_text.done", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "text": text, "logprobs": []any{}}},
		{"response.content_part.done", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "part": textPart(text)}},
		{"response.output_item.done", map[string]any{"output_index": it.index, "item": it.finishedObject}},
	} {
		if err := s.event(e.typ, e.v); err != nil {
			return err
		}
	}
	return nil
}

// callDelta opens a function_call item on a call's first fragment (which
// carries its id and name: the normalizer sends no other first fragment)
// and writes its arguments.
func (s *Stream) callDelta(index int, id, name, args string) error {
	it, ok := s.calls[index]
	if !ok {
		if err := s.closeCurrent(); err != nil {
			return err
		}
		itemID := s.itemIDs[id]
		if itemID == "" {
			itemID = NewID("fc")
		}
		it = s.add("function_call", itemID)
		it.callID, it.name = id, name
		s.calls[index] = it
		if err := s.event("response.output_item.added", map[string]any{"output_index": it.index, "item": s.meta.callItem(it.id, id, name, "", "in_progress")}); err != nil {
			return err
		}
	}
	if args == "" {
		return nil
	}
	it.text.WriteString(args)
	return s.event("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": it.index, "delta": args})
}

// Done ends the response: the open items closed, then response.completed
// (or response.incomplete, for an answer cut at its length or filtered)
// with every output item and the usage.
func (s *Stream) Done() error {
	if s.ended {
		return nil
	}
	s.ended = true
	if err := s.start(); err != nil {
		return err
	}
	if err := s.closeCurrent(); err != nil {
		return err
	}
	calls := make([]*openItem, 0, len(s.calls))
	for _, it := range s.calls {
		calls = append(calls, it)
	}
	slices.SortFunc(calls, func(a, b *openItem) int { return a.index - b.index })
	for _, it := range calls {
		args := it.text.String()
		it.finishedObject = s.meta.callItem(it.id, it.callID, it.name, args, "completed")
		name := it.name
		if _, fn, ok := s.meta.Request.Unflatten(name); ok {
			name = fn
		}
		if err := s.event("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": it.index, "name": name, "arguments": args}); err != nil {
			return err
		}
		if err := s.event("response.output_item.done", map[string]any{"output_index": it.index, "item": it.finishedObject}); err != nil {
			return err
		}
	}
	status, extra := finish(s.tally.Finish)
	s.completed = true
	s.final, _ = json.Marshal(s.meta.object(status, s.Output(), usage(s.tally.Usage), extra))
	return s.event("response."+status, map[string]any{"response": json.RawMessage(s.final)})
}

// Object returns the final response object of a completed response.
func (s *Stream) Object() []byte { return s.final }

// Fail ends the response as failed with the error body's code and
// message: the one event a stream that broke off after it started gets.
func (s *Stream) Fail(body wire.ErrorBody) error {
	if s.ended {
		return nil
	}
	s.ended = true
	if err := s.start(); err != nil {
		return err
	}
	var obj map[string]any
	_ = json.Unmarshal(ErrorObject(s.meta, body), &obj)
	obj["output"] = s.Output()
	return s.event("response.failed", map[string]any{"response": obj})
}

// Output returns the output items finished so far, by output index.
func (s *Stream) Output() []json.RawMessage {
	out := []json.RawMessage{}
	for _, it := range s.items {
		if it.finishedObject != nil {
			out = append(out, it.finishedObject)
		}
	}
	return out
}

// Completed reports a response that ended completed or incomplete.
func (s *Stream) Completed() bool { return s.completed }
