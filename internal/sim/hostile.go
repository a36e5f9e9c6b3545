package sim

import (
	"strconv"
	"strings"
)

// Shape is a request body built to be a worst case for one part of the
// request path, for the hostile-input tests and benchmarks.
type Shape struct {
	// Name says what the body is the worst case of.
	Name string
	// Body is a chat request of about the size asked for.
	Body []byte
}

// MaxShapeMessages keeps every shape within the gateway's default
// server.max_messages, so that each one travels the whole path instead of
// being refused at its door.
const MaxShapeMessages = 9000

// HostileShapes returns chat requests for model of about size bytes each:
// "plain" first (an ordinary agent transcript: turns of a user message, an
// assistant call and its reply, all paired — the baseline), then "one
// string" (a single user message) and bodies shaped to be worst cases: one
// call id shared by every call of a message, as many distinct unanswered
// ids, calls without ids, arguments sent as objects, many replies to one
// call, many turns reusing one id, deep nesting within the decoder's
// limit, many turns for a route that trims its input, and as many members
// as the decoder takes in every object.
func HostileShapes(model string, size int) []Shape {
	var b strings.Builder
	text := strings.Repeat("lorem ipsum dolor sit amet ", max(size/(MaxShapeMessages/3)/2/27, 1))
	b.WriteString(`{"role":"system","content":"You are a careful agent."}`)
	for i := 0; b.Len() < size && i < MaxShapeMessages/3-1; i++ {
		id := "call_" + strconv.Itoa(i%4) // ids reused across rounds, as providers do
		b.WriteString(`,{"role":"user","content":"` + text + `"},{"role":"assistant","content":null,"tool_calls":[` +
			call(id, `{\"path\":\"f`+strconv.Itoa(i)+`.md\"}`) + `]},{"role":"tool","tool_call_id":"` + id + `","content":"` + text + `"}`)
	}
	shapes := []Shape{
		{Name: "plain", Body: chatBody(model, b.String())},
		{Name: "one-string", Body: chatBody(model, `{"role":"user","content":"`+strings.Repeat("x", size)+`"}`)},
	}
	add := func(name string, msgs string) {
		shapes = append(shapes, Shape{Name: name, Body: chatBody(model, msgs)})
	}

	// Assistant messages of as many calls as a message may carry
	// (wire.MaxCalls), all saying id "c", each with its own arguments:
	// dedupe renames every one (c_2, c_3, …), repair seals them.
	add("shared-id", callMessages(size, func(i int) string { return call("c", `{\"n\":`+strconv.Itoa(i)+`}`) }))
	// As many distinct ids, none answered: repair seals each.
	add("distinct-ids", callMessages(size, func(i int) string { return call("call_"+strconv.Itoa(i), `{}`) }))
	// Calls without an id: each gets a synthesized one, then a seal.
	add("empty-ids", callMessages(size, func(i int) string { return call("", `{\"n\":`+strconv.Itoa(i)+`}`) }))
	// Arguments sent as objects: each is made a string.
	add("object-args", callMessages(size, func(i int) string {
		return `{"id":"call_` + strconv.Itoa(i) + `","type":"function","function":{"name":"f","arguments":{"n":` + strconv.Itoa(i) + `}}}`
	}))
	// One call, then thousands of replies to it: one is its reply, the
	// rest are dropped.
	pad := strings.Repeat("r", max(size/MaxShapeMessages-60, 1))
	b.Reset()
	b.WriteString(`{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[` + call("c", `{}`) + `]}`)
	for range MaxShapeMessages - 3 {
		b.WriteString(`,{"role":"tool","tool_call_id":"c","content":"` + pad + `"}`)
	}
	add("replies-to-one", b.String()+`,{"role":"user","content":"next"}`)
	// Thousands of turns that each call "c", every reply at the end: each
	// reply's owner is the closest earlier unanswered call.
	b.Reset()
	b.WriteString(`{"role":"user","content":"go"}`)
	turns := MaxShapeMessages/2 - 1
	for range turns {
		b.WriteString(`,{"role":"assistant","content":"` + pad + `","tool_calls":[` + call("c", `{}`) + `]}`)
	}
	for range turns {
		b.WriteString(`,{"role":"tool","tool_call_id":"c","content":"ok"}`)
	}
	add("reused-id-turns", b.String())
	// Content nested 9,000 levels deep (the decoder allows 10,000), as
	// many times as fits.
	deep := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
	b.Reset()
	b.WriteString(`{"role":"user","content":"go"}`)
	for n := 0; n < size; n += len(deep) + 40 {
		b.WriteString(`,{"role":"user","content":"x","x_nested":` + deep + `}`)
	}
	add("deep", b.String())
	// Many turns for a route that trims its input (model "<model>-trim"):
	// every turn but the last is trimmed away.
	b.Reset()
	turnPad := strings.Repeat("t", max(size/MaxShapeMessages-40, 1))
	for i := range MaxShapeMessages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"` + turnPad + `"}`)
	}
	shapes = append(shapes, Shape{Name: "trim-turns", Body: chatBody(model+"-trim", b.String())})
	// As many members as the decoder takes in each object it reads
	// (wire.MaxMembers): at the top level and in every message.
	var members strings.Builder
	for i := range 1000 {
		members.WriteString(`,"x` + strconv.Itoa(i) + `":1`)
	}
	b.Reset()
	b.WriteString(`{"role":"user","content":"go"` + members.String() + `}`)
	for b.Len() < size {
		b.WriteString(`,{"role":"user","content":"go"` + members.String() + `}`)
	}
	shapes = append(shapes, Shape{Name: "many-members", Body: []byte(`{"model":"` + model + `","messages":[` + b.String() + `]` + members.String() + `}`)})
	return shapes
}

func chatBody(model, messages string) []byte {
	return []byte(`{"model":"` + model + `","messages":[` + messages + `]}`)
}

func call(id, args string) string {
	return `{"id":"` + id + `","type":"function","function":{"name":"f","arguments":"` + args + `"}}`
}

// callsPerMessage is how many calls each assistant message of a shape
// carries: as many as the decoder takes in one message, about.
const callsPerMessage = 1000

// callMessages is a user message, then assistant messages of
// callsPerMessage calls (f(0), f(1), …) each followed by a user message,
// until about size bytes.
func callMessages(size int, f func(int) string) string {
	var b strings.Builder
	b.WriteString(`{"role":"user","content":"go"}`)
	for i := 0; b.Len() < size; {
		b.WriteString(`,{"role":"assistant","content":null,"tool_calls":[`)
		for k := range callsPerMessage {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f(i))
			i++
		}
		b.WriteString(`]},{"role":"user","content":"next"}`)
	}
	return b.String()
}
