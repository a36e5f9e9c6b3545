package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// The content block types of Anthropic's Messages API and the output item
// types of OpenAI's Responses API: what a client of each may be sent.
var (
	messagesBlockTypes = []string{"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "web_search_tool_result",
		"web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
		"tool_search_tool_result", "mcp_tool_use", "mcp_tool_result", "container_upload"}
	responsesItemTypes = []string{"message", "reasoning", "function_call", "web_search_call", "file_search_call", "computer_call",
		"code_interpreter_call", "image_generation_call", "local_shell_call", "shell_call", "apply_patch_call", "mcp_call",
		"mcp_list_tools", "mcp_approval_request", "custom_tool_call"}
)

// clientAPIsConfig has one route per upstream protocol, each reasoning,
// so that every answer has what a same-protocol client is handed besides
// text and calls (a Responses message item, signed thinking).
var clientAPIsConfig = `
upstreams:
  - {name: compat, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: gemini, protocol: gemini, url: "UPSTREAM_URL/v1beta"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
  - {name: bedrock, protocol: bedrock, url: "UPSTREAM_URL", api_key: ` + sim.AWSBearerToken + `}
routes:
  - {name: openai, model: "openai/*", upstream: compat}
  - {name: bedrock, model: "bedrock/*", upstream: bedrock, reasoning: {format: thinking-budget, level: low}}
  - {name: anthropic, model: "anthropic/*", upstream: claude, reasoning: {format: thinking-budget, level: low}}
  - {name: gemini, model: "gemini/*", upstream: gemini, reasoning: {format: reasoning-effort, level: high}}
  - {name: responses, model: "responses/*", upstream: oai, reasoning: {format: reasoning-effort, level: high}}
`

// Each client API's answer holds only its own protocol's blocks or items,
// whatever the upstream's protocol, streamed and whole: a Responses
// upstream's message item never reaches a Messages client as a content
// block, an Anthropic block never a Responses client as an item, and a
// chat client gets none of the gateway's own members.
func TestClientAPIsOwnTypes(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, clientAPIsConfig)
	for _, upstream := range []string{"openai", "anthropic", "gemini", "responses", "bedrock"} {
		for _, script := range []string{"text", "tool", "parallel"} {
			model := upstream + "/sim-" + script
			if upstream == "openai" && script == "text" {
				model = upstream + "/sim-deepseek" // reasoning too
			}
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s/stream=%v", model, stream)
				t.Run("messages/"+name, func(t *testing.T) {
					resp, body := e.Do(t, "POST", "/messages", fmt.Sprintf(`{"model":%q,"max_tokens":4096,"stream":%v,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"weather?"}]}`, model, stream), "x-api-key", "k")
					ownTypes(t, resp, body, messagesBlockTypes, typesOf(t, body, stream, "content_block_start", "content_block", "content"))
				})
				t.Run("responses/"+name, func(t *testing.T) {
					resp, body := e.Do(t, "POST", "/responses", fmt.Sprintf(`{"model":%q,"stream":%v,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"input":"weather?"}`, model, stream), "Authorization", "Bearer k")
					ownTypes(t, resp, body, responsesItemTypes, typesOf(t, body, stream, "response.output_item.done", "item", "output"))
				})
				t.Run("chat/"+name, func(t *testing.T) {
					resp, body := e.Do(t, "POST", "/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"tools":[%s],"messages":[{"role":"user","content":"weather?"}]}`, model, stream, sim.WeatherTool), "Authorization", "Bearer k")
					if resp.StatusCode != 200 || strings.Contains(body, "toolgate_") {
						t.Fatalf("%d %s", resp.StatusCode, body)
					}
				})
			}
		}
	}
}

// ownTypes checks an answer of 200 whose blocks or items (types) are all
// of its API's (allowed), with none of the gateway's own members.
func ownTypes(t *testing.T, resp *http.Response, body string, allowed, types []string) {
	t.Helper()
	if resp.StatusCode != 200 || len(types) == 0 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, typ := range types {
		if !slices.Contains(allowed, typ) {
			t.Errorf("a block or item of type %q, not one of the client API's: %v\n%s", typ, types, body)
		}
	}
	if strings.Contains(body, "toolgate_") {
		t.Errorf("the gateway's own member reached the client: %s", body)
	}
}

// typesOf lists the "type" of each block or item an answer holds: from a
// stream, the member inner of each event named event; from a whole
// answer, the objects of its array member whole.
func typesOf(t *testing.T, body string, stream bool, event, inner, whole string) []string {
	t.Helper()
	var types []string
	if !stream {
		var m map[string]json.RawMessage
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(body), &m) != nil || json.Unmarshal(m[whole], &blocks) != nil {
			return nil
		}
		for _, b := range blocks {
			types = append(types, b.Type)
		}
		return types
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]json.RawMessage
		if json.Unmarshal([]byte(data), &ev) != nil || string(ev["type"]) != `"`+event+`"` {
			continue
		}
		var b struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(ev[inner], &b)
		types = append(types, b.Type)
	}
	return types
}

// A client's reasoning setting in another protocol's terms reaches the
// upstream only where the route takes it (client_effort): Claude Code's
// thinking, on or off, and a Responses client's effort reach a model that
// does not reason (which refuses every reasoning member) as nothing, and
// a route with client_effort as the level they map to.
func TestReasoningOnlyWhereTaken(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: compat, url: "UPSTREAM_URL/v1"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
routes:
  - {name: effort, model: "effort/*", upstream: compat, reasoning: {format: reasoning-effort, client_effort: true}}
  - {name: plainresp, model: "responses/*", upstream: oai}
  - {name: plain, model: "*", upstream: compat}
`)
	for _, thinking := range []string{`,"thinking":{"type":"enabled","budget_tokens":31999}`, `,"thinking":{"type":"disabled"}`, ``} {
		for _, model := range []string{"sim-plain", "responses/sim-plain"} {
			for _, stream := range []bool{false, true} {
				resp, body := e.Do(t, "POST", "/messages", fmt.Sprintf(`{"model":%q,"max_tokens":32000,"stream":%v%s,"messages":[{"role":"user","content":"weather?"}]}`, model, stream, thinking), "x-api-key", "k")
				if resp.StatusCode != 200 || strings.Contains(body, "error") {
					t.Errorf("messages %s %s stream=%v: %d %s", model, thinking, stream, resp.StatusCode, body)
				}
			}
		}
	}
	resp, body := e.Do(t, "POST", "/responses", `{"model":"sim-plain","input":"weather?","reasoning":{"effort":"high","summary":"auto"}}`, "Authorization", "Bearer k")
	if resp.StatusCode != 200 {
		t.Errorf("responses to a chat model that does not reason: %d %s", resp.StatusCode, body)
	}
	for thinking, want := range map[string]string{`{"type":"enabled","budget_tokens":31999}`: `"reasoning_effort":"high"`, `{"type":"disabled"}`: `"reasoning_effort":"none"`} {
		resp, body := e.Do(t, "POST", "/messages", `{"model":"effort/sim-text","max_tokens":32000,"thinking":`+thinking+`,"messages":[{"role":"user","content":"weather?"}]}`, "x-api-key", "k")
		if resp.StatusCode != 200 || !strings.Contains(string(s.LastRequest()), want) {
			t.Errorf("client_effort, thinking %s: %d %s; sent %s", thinking, resp.StatusCode, body, s.LastRequest())
		}
	}
}

// codexTools are Codex's stock tools, in the shape it declares them: a
// function, a namespace of functions, and the hosted web_search.
const codexTools = `[{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[{"type":"function","name":"spawn_agent","description":"Spawn.","strict":false,"parameters":{"type":"object","properties":{"message":{"type":"string"}}}}]},` +
	`{"type":"function","name":"exec_command","description":"Run.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}},{"type":"web_search","external_web_access":true}]`

// Codex's stock tools on every route: a namespace's functions go to an
// upstream of another protocol flattened (multi_agent_v1__spawn_agent)
// and its calls come back as the function and its namespace, the
// history's namespaced calls flattened too; web_search, which such an
// upstream cannot run, is left out, named in X-Toolgate-Dropped and
// counted — or, allowed (hosted_tools), refused on a route with
// refuse_hosted_tools. A Responses upstream gets the tools as declared
// but web_search, which runs at the gateway's cost, left out the same
// way unless the route allows it (hosted_tools: [web_search]).
func TestCodexToolsEveryRoute(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, clientAPIsConfig+`  - {name: strict, model: "refuse/*", upstream: compat, refuse_hosted_tools: true, hosted_tools: [web_search]}
  - {name: hosted, model: "hosted/*", upstream: oai, hosted_tools: [web_search]}
`)
	history := `[{"type":"message","role":"user","content":"go"},{"type":"function_call","call_id":"c0","namespace":"multi_agent_v1","name":"spawn_agent","arguments":"{}"},{"type":"function_call_output","call_id":"c0","output":"spawned"},{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}]`
	for _, upstream := range []string{"openai", "anthropic", "gemini", "responses", "bedrock", "hosted"} {
		for _, stream := range []bool{false, true} {
			resp, body := e.Do(t, "POST", "/responses", fmt.Sprintf(`{"model":"%s/sim-tool","stream":%v,"tools":%s,"input":%s}`, upstream, stream, codexTools, history), "Authorization", "Bearer k")
			sent := string(s.LastRequest())
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s\nsent %s", upstream, resp.StatusCode, body, sent)
			}
			if upstream == "responses" || upstream == "hosted" {
				allowed := upstream == "hosted"
				dropped := resp.Header.Get("X-Toolgate-Dropped")
				if !strings.Contains(sent, `"type":"namespace"`) || strings.Contains(sent, `"type":"web_search"`) != allowed || (dropped == "") != allowed {
					t.Errorf("%s: the tools as declared, web_search only where allowed: %s %q", upstream, sent, dropped)
				}
				continue
			}
			if resp.Header.Get("X-Toolgate-Dropped") != "tool:web_search" || strings.Contains(sent, "web_search") || !strings.Contains(sent, "multi_agent_v1__spawn_agent") || strings.Contains(sent, `"spawn_agent"`) {
				t.Errorf("%s: dropped %q; sent %s", upstream, resp.Header.Get("X-Toolgate-Dropped"), sent)
			}
			resp, body = e.Do(t, "POST", "/responses", fmt.Sprintf(`{"model":"%s/sim-tool","stream":%v,"tools":%s,"input":"go"}`, upstream, stream, codexTools), "Authorization", "Bearer k")
			if resp.StatusCode != 200 || !strings.Contains(body, `"namespace":"multi_agent_v1"`) || strings.Contains(body, "multi_agent_v1__") {
				t.Errorf("%s stream=%v: the call goes back as the function and its namespace: %s", upstream, stream, body)
			}
		}
	}
	if n := e.Metric(t, "toolgate_repairs_total", map[string]string{"route": "openai", "action": "dropped_tool"}); n != 4 {
		t.Errorf("dropped_tool counted %v times", n)
	}
	resp, body := e.Do(t, "POST", "/responses", `{"model":"refuse/sim-tool","tools":`+codexTools+`,"input":"go"}`, "Authorization", "Bearer k")
	if resp.StatusCode != 400 || !strings.Contains(body, "web_search") {
		t.Errorf("refuse_hosted_tools: %d %s", resp.StatusCode, body)
	}
	// A tool the client runs is refused, never left out unseen: a custom
	// tool, the local shell.
	for typ, tool := range map[string]string{"custom": `{"type":"custom","name":"apply_patch","format":{"type":"text"}}`, "local_shell": `{"type":"local_shell"}`} {
		resp, body = e.Do(t, "POST", "/responses", `{"model":"openai/sim-tool","tools":[`+tool+`],"input":"go"}`, "Authorization", "Bearer k")
		if resp.StatusCode != 400 || !strings.Contains(body, typ) {
			t.Errorf("a %s tool: %d %s", typ, resp.StatusCode, body)
		}
	}
}

// A restore miss is a turn that had reasoning the store no longer has: on
// an Anthropic route without thinking, replaying a tool turn that was
// answered without thinking counts nothing, while a turn the gateway
// never saw answered still counts a miss.
func TestRestoreMissOnlyReal(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, messagesConfig)
	resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"claude-tool","tools":[`+sim.WeatherTool+`],"messages":[{"role":"user","content":"weather?"}]}`)
	var first struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &first) != nil || len(first.Choices) == 0 || len(first.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	replay := func(id string) {
		t.Helper()
		resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"claude-text","tools":[`+sim.WeatherTool+`],"messages":[{"role":"user","content":"weather?"},`+
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},`+
			`{"role":"tool","tool_call_id":"`+id+`","content":"sunny"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	replay(first.Choices[0].Message.ToolCalls[0].ID)
	if n := e.Metric(t, "toolgate_reasoning_restores_total", map[string]string{"route": "claude", "result": "miss"}); n != 0 {
		t.Errorf("a turn answered without thinking counted %v misses", n)
	}
	replay("toolu_never_seen")
	if n := e.Metric(t, "toolgate_reasoning_restores_total", map[string]string{"route": "claude", "result": "miss"}); n != 1 {
		t.Errorf("a turn never seen counted %v misses", n)
	}
}
