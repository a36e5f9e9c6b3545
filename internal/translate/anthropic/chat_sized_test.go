package anthropic

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/translate"
)

// messagesShapes are Messages requests of the shapes whose chat form
// Chat sizes (chatSize): an agent's transcript, long texts each way
// (strings and blocks, results that failed), one-letter messages.
func messagesShapes() map[string]string {
	long := strings.Repeat("check the next city and report. ", 6)
	var agent, texts, tiny strings.Builder
	for i := range 100 {
		fmt.Fprintf(&agent, `{"role":"user","content":"%s"},{"role":"assistant","content":[{"type":"text","text":"%s"},{"type":"tool_use","id":"t%d","name":"get_weather","input":{"city":"City \"%d\""}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]},`, long, long, i, i, i, long)
		fmt.Fprintf(&texts, `{"role":"user","content":[{"type":"text","text":"%s"},{"type":"text","text":"%s"}]},{"role":"assistant","content":"%s"},`+
			`{"role":"user","content":"%s"},{"role":"assistant","content":[{"type":"tool_use","id":"e%d","name":"f","input":{}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"e%d","is_error":true,"content":"%s"}]},`, long, long, long, long, i, i, long)
		tiny.WriteString(`{"role":"user","content":"a"},{"role":"assistant","content":"b"},`)
	}
	out := map[string]string{}
	for name, msgs := range map[string]string{"agent": agent.String(), "texts": texts.String(), "tiny": tiny.String()} {
		out[name] = `{"model":"m","max_tokens":10,"system":"` + long + `","messages":[` + msgs + `{"role":"user","content":"Summarize."}],` +
			`"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"f","input_schema":{"type":"object"}}]}`
	}
	return out
}

// Chat writes each shape's chat form into the buffer chatSize sizes, for
// every kind of upstream, its long strings put apart or not: never a
// larger one, which would cost the chat form once more.
func TestChatSized(t *testing.T) {
	for name, body := range messagesShapes() {
		r, err := Decode([]byte(body), false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, o := range []ChatOptions{{Protocol: translate.OpenAI}, {Protocol: translate.Gemini, Apart: true}, {Protocol: translate.Anthropic, Apart: true}, {Protocol: translate.Anthropic}} {
			o.CarriedMember, o.ReasoningField = "toolgate_carried", "reasoning_content"
			size, _ := r.chatSize(o)
			tr, err := r.Chat(o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if cap(tr.Chat) != size {
				t.Errorf("%s (%v, apart %v): %d bytes written in a buffer of %d, sized %d", name, o.Protocol, o.Apart, len(tr.Chat), cap(tr.Chat), size)
			}
		}
	}
}
