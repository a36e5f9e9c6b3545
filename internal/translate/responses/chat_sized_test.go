package responses

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// chatBody is Translate's chat request without Apart (whose messages
// then name no string), as most of these tests read it.
func (r *Request) chatBody(items []json.RawMessage, o ChatOptions) ([]byte, error) {
	o.Apart = false
	t, err := r.Translate(items, o)
	return t.Chat, err
}

// inputShapes are Responses requests of the shapes whose chat form
// Translate sizes (chatSize): an agent's transcript, long texts each way
// (strings and parts, outputs of both), long answers, one-letter
// messages.
func inputShapes() map[string]string {
	long := strings.Repeat("check the next city and report. ", 6)
	var agent, texts, answers, tiny strings.Builder
	for i := range 100 {
		fmt.Fprintf(&agent, `{"role":"user","content":"%s"},{"type":"function_call","call_id":"c%d","name":"get_weather","arguments":"{\"city\":\"City %d\"}"},`+
			`{"type":"function_call_output","call_id":"c%d","output":"%s"},`, long, i, i, i, long)
		fmt.Fprintf(&texts, `{"role":"developer","content":"%s"},{"type":"message","role":"user","content":[{"type":"input_text","text":"%s"}]},`+
			`{"role":"assistant","content":[{"type":"output_text","text":"%s"}]},{"role":"assistant","content":"%s"},{"type":"function_call","call_id":"e%d","name":"f","arguments":"{}"},`+
			`{"type":"function_call_output","call_id":"e%d","output":[{"type":"input_text","text":"%s"}]},`, long, long, long, long, i, i, long)
		fmt.Fprintf(&answers, `{"role":"user","content":"go"},{"role":"assistant","content":"%s"},`, long)
		tiny.WriteString(`{"role":"user","content":"a"},{"role":"assistant","content":"b"},`)
	}
	out := map[string]string{}
	for name, items := range map[string]string{"agent": agent.String(), "texts": texts.String(), "answers": answers.String(), "tiny": tiny.String()} {
		out[name] = `{"model":"m","instructions":"` + long + `","input":[` + items + `{"role":"user","content":"Summarize."}],` +
			`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"function","name":"f","parameters":{"type":"object"}}]}`
	}
	return out
}

// Translate writes each shape's chat form into the buffer chatSize
// sizes, its items kept or not, its long strings put apart or not: never
// a larger one, which would cost the chat form once more.
func TestChatSized(t *testing.T) {
	for name, body := range inputShapes() {
		r, err := Decode([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, o := range []ChatOptions{{}, {Apart: true}, {Keep: true, Apart: true}, {Keep: true}} {
			o.CarriedMember, o.ReasoningField = "toolgate_carried", "reasoning_content"
			size, _ := r.chatSize(r.Input, o.Keep, o.Apart)
			tr, err := r.Translate(r.Input, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if cap(tr.Chat) != size {
				t.Errorf("%s (keep %v, apart %v): %d bytes written in a buffer of %d, sized %d", name, o.Keep, o.Apart, len(tr.Chat), cap(tr.Chat), size)
			}
		}
	}
}
