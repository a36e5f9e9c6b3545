package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// openaiResponsesEnv runs the gateway in front of the simulator's
// Responses mode: "think-*" routes reason (effort high: the summary asked
// for, the reasoning encrypted since the upstream keeps nothing).
func openaiResponsesEnv(t *testing.T) (*gatewaytest.Env, *sim.Sim) {
	return gatewaytest.StartSim(t, sim.Options{}, `
responses: {store: memory}
upstreams: [{name: oai, protocol: responses, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}"}]
routes:
  - {name: think, model: "think-*", upstream: oai, reasoning: {format: reasoning-effort, level: high}, hosted_tools: [web_search], org_wide: [files]}
  - {name: plain, model: "*", upstream: oai}
`)
}

// sentResponses is the input the simulator last received, item by item.
type sentItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	CallID           string `json:"call_id"`
	EncryptedContent string `json:"encrypted_content"`
}

func lastInput(t *testing.T, s *sim.Sim) []sentItem {
	t.Helper()
	var req struct {
		Input []sentItem `json:"input"`
		Store bool       `json:"store"`
	}
	if err := json.Unmarshal(s.LastRequest(), &req); err != nil {
		t.Fatalf("%v: %s", err, s.LastRequest())
	}
	return req.Input
}

// Text, a streamed call and parallel calls reach openai-go as chat
// completions: the reasoning summary as reasoning_content, the text, each
// function call whole with its call_id as id, the finish reasons and the
// usage (reasoning and cached tokens) as OpenAI's chat reports them; the
// upstream is asked to keep nothing and to hand its reasoning back
// encrypted.
func TestResponsesUpstreamStreams(t *testing.T) {
	e, s := openaiResponsesEnv(t)
	text := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-text", Messages: gatewaytest.UserMsg("hi"),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	if text.err != nil || !strings.HasPrefix(text.msg.Content, "Hello from the toolgate simulator") || text.finish != "stop" || text.usage != 32 {
		t.Fatalf("text: err %v, content %q, finish %q, usage %d", text.err, text.msg.Content, text.finish, text.usage)
	}
	if got := deltaField(t, text.raw, "reasoning_content"); got != "Thinking about it, step 1." {
		t.Errorf("reasoning %q", got)
	}
	var sent map[string]any
	_ = json.Unmarshal(s.LastRequest(), &sent)
	if sent["store"] != false || !strings.Contains(string(s.LastRequest()), `"include":["reasoning.encrypted_content"]`) ||
		s.LastHeader().Get("Authorization") != "Bearer "+gatewaytest.UpstreamKey {
		t.Errorf("sent %s with %v", s.LastRequest(), s.LastHeader())
	}
	par := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if par.err != nil || par.finish != "tool_calls" || len(par.msg.ToolCalls) != 2 || par.msg.ToolCalls[1].Function.Arguments != `{"city":"Rome"}` ||
		!strings.HasPrefix(par.msg.ToolCalls[0].ID, "call_sim_") {
		t.Fatalf("parallel: err %v, finish %q, calls %+v", par.err, par.finish, par.msg.ToolCalls)
	}
	whole, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "think-incomplete", Messages: gatewaytest.UserMsg("hi")})
	if err != nil || whole.Choices[0].FinishReason != "length" || whole.Usage.CompletionTokensDetails.ReasoningTokens != 7 || whole.Usage.PromptTokensDetails.CachedTokens != 5 {
		t.Fatalf("incomplete, non-streamed: %v %+v", err, whole)
	}
}

// A three-step tool loop on a reasoning model, the upstream keeping
// nothing, whose client has no slot for reasoning: every follow-up
// carries the earlier encrypted reasoning items right in front of the
// calls they preceded, the calls with their item ids, and the
// simulator's checks (the seal, the following item, the required
// reasoning) accept each step.
func TestResponsesUpstreamReasoningRestored(t *testing.T) {
	e, s := openaiResponsesEnv(t)
	chatToolLoop(t, e, "think-toolloop", s.LastRequest)
	input := lastInput(t, s)
	pairs := 0
	for i, it := range input {
		if it.Type == "reasoning" && it.EncryptedContent != "" && i+1 < len(input) && input[i+1].Type == "function_call" && input[i+1].ID != "" {
			pairs++
		}
	}
	if pairs != 2 {
		t.Errorf("%d encrypted reasoning items in front of their calls: %s", pairs, s.LastRequest())
	}
	if n := e.Metric(t, "toolgate_reasoning_restores_total", map[string]string{"route": "think", "result": "restored"}); n != 3 {
		t.Errorf("restores = %v, want 3", n)
	}
}

// The failures: a stream cut before response.completed ends with an
// error event; a 429 keeps its Retry-After; a broken transcript is
// repaired and accepted by the simulator's pairing rules.
func TestResponsesUpstreamErrors(t *testing.T) {
	e, s := openaiResponsesEnv(t)
	cut := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-cut", Messages: gatewaytest.UserMsg("hi")})
	if cut.err == nil || !strings.Contains(cut.err.Error(), "upstream_stream_incomplete") {
		t.Fatalf("cut: %v", cut.err)
	}
	resp, b := e.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"o-error-429","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	first := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if first.err != nil || len(first.msg.ToolCalls) != 1 {
		t.Fatalf("first: %v", first.err)
	}
	history := append(gatewaytest.UserMsg("weather?"), openai.ToolMessage("stale", "call_gone"), first.msg.ToParam(), openai.UserMessage("still there?"))
	if _, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool}); err != nil {
		t.Fatalf("broken transcript: %v (sent %s)", err, s.LastRequest())
	}
	if sent := string(s.LastRequest()); strings.Contains(sent, "call_gone") || !strings.Contains(sent, "never completed") {
		t.Errorf("sent %s", sent)
	}
}

// Encrypted reasoning is valid only for the organization that made it.
// Two deployments of two organizations: a conversation stays on the one
// that reasoned (sticky); once that one fails and cools down, the next
// request goes to the other without the reasoning items (a miss, counted)
// instead of sending them to be refused with invalid_encrypted_content.
func TestResponsesUpstreamDeployments(t *testing.T) {
	type deployment struct {
		sim  *sim.Sim
		down atomic.Bool
		url  string
	}
	var ds [2]*deployment
	for i, org := range []string{"org-a", "org-b"} {
		d := &deployment{sim: sim.New(sim.Options{Org: org})}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if d.down.Load() {
				http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
				return
			}
			d.sim.ServeHTTP(w, r)
		}))
		defer srv.Close()
		d.url, ds[i] = srv.URL, d
	}
	e := gatewaytest.Start(t, ds[0].url, `
upstreams:
  - {name: a, protocol: responses, url: "UPSTREAM_URL/v1"}
  - {name: b, protocol: responses, url: "`+ds[1].url+`/v1"}
routes:
  - {name: think, model: "*", upstreams: [{name: a}, {name: b}], reasoning: {format: reasoning-effort, level: high}}
`)
	session := option.WithHeader("X-Session-Id", "conversation-1")
	history := gatewaytest.UserMsg("weather in Paris, then Rome?")
	first := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool}, session)
	if first.err != nil {
		t.Fatal(first.err)
	}
	history = append(history, first.msg.ToParam(), openai.ToolMessage("sunny", first.msg.ToolCalls[0].ID))
	home, other := ds[0], ds[1]
	if other.sim.Requests() == 1 {
		home, other = other, home
	}
	second := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool}, session)
	if second.err != nil || home.sim.Requests() != 2 || other.sim.Requests() != 0 {
		t.Fatalf("second: %v; home %d requests, other %d: the conversation moved", second.err, home.sim.Requests(), other.sim.Requests())
	}
	history = append(history, second.msg.ToParam(), openai.ToolMessage("cloudy", second.msg.ToolCalls[0].ID))
	home.down.Store(true)
	third := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool}, session)
	if third.err != nil || other.sim.Requests() != 1 {
		t.Fatalf("after the move: %v, %d requests to the other (it got %s)", third.err, other.sim.Requests(), other.sim.LastRequest())
	}
	for _, it := range lastInput(t, other.sim) {
		if it.Type == "reasoning" || it.ID != "" {
			t.Errorf("the other deployment was sent %+v: another organization's reasoning", it)
		}
	}
	if n := e.Metric(t, "toolgate_reasoning_restores_total", map[string]string{"route": "think", "result": "miss"}); n != 2 {
		t.Errorf("misses = %v, want 2 (the two turns whose reasoning stayed with the first deployment)", n)
	}
}

// openai-go's Responses client through a Responses route: the tool loop
// with previous_response_id, and with the client passing the items
// itself; the reasoning goes back encrypted in front of its call both
// ways.
func TestResponsesClientOnResponsesUpstream(t *testing.T) {
	e, s := openaiResponsesEnv(t)
	r := streamResponse(t, e, responses.ResponseNewParams{Model: "think-tool", Input: input("weather?"), Tools: weatherFunction})
	if r.err != nil || r.terminal != "response.completed" {
		t.Fatalf("first: %v %q", r.err, r.terminal)
	}
	var call responses.ResponseOutputItemUnion
	for _, it := range r.final.Output {
		if it.Type == "function_call" {
			call = it
		}
	}
	output := responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}}
	chained, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "think-tool", PreviousResponseID: openai.String(r.final.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{output}}, Tools: weatherFunction})
	if err != nil || !strings.HasPrefix(chained.OutputText(), "Hello") {
		t.Fatalf("previous_response_id: %v (sent %s)", err, s.LastRequest())
	}
	if in := lastInput(t, s); len(in) < 3 || in[1].Type != "reasoning" || in[1].EncryptedContent == "" || in[2].ID == "" {
		t.Errorf("sent %s", s.LastRequest())
	}
	items := responses.ResponseInputParam{
		{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String("weather?")}}},
		{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: call.CallID, Name: call.Name, Arguments: call.Arguments.OfString}},
		output,
	}
	manual, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "think-tool", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}, Tools: weatherFunction})
	if err != nil || !strings.HasPrefix(manual.OutputText(), "Hello") {
		t.Fatalf("items passed by the client: %v (sent %s)", err, s.LastRequest())
	}
	if in := lastInput(t, s); len(in) < 3 || in[1].Type != "reasoning" {
		t.Errorf("sent %s", s.LastRequest())
	}
}

// A Responses client that keeps the items it was given and sends them
// back itself (no previous_response_id, nothing stored): the reasoning
// items reach it with their encrypted content sealed by the gateway for
// the upstream that issued it, the function calls with the upstream's
// item ids. Each step goes through a new gateway, whose stores are empty,
// so only what the client kept can satisfy the simulator's checks (the
// seal, the following item, the required reasoning); the upstream gets
// its encrypted content back as it issued it. Sent to another
// organization's deployment, the same items are left out (counted as
// repairs action dropped_foreign_reasoning), never refused.
func TestResponsesClientKeepsEncryptedReasoning(t *testing.T) {
	home, away := sim.New(sim.Options{Org: "org-a"}), sim.New(sim.Options{Org: "org-b"})
	homeSrv, awaySrv := httptest.NewServer(home), httptest.NewServer(away)
	defer homeSrv.Close()
	defer awaySrv.Close()
	cfg := `
upstreams:
  - {name: a, protocol: responses, url: "UPSTREAM_URL/v1"}
  - {name: b, protocol: responses, url: "` + awaySrv.URL + `/v1"}
routes:
  - {name: away, model: "away-*", upstream: b, reasoning: {format: reasoning-effort, level: high}}
  - {name: think, model: "*", upstream: a, reasoning: {format: reasoning-effort, level: high}}
`
	for _, streamed := range []bool{true, false} {
		kept := []json.RawMessage{json.RawMessage(`{"role":"user","content":"weather in Paris, then Rome?"}`)}
		send := func(e *gatewaytest.Env, model string) []responses.ResponseOutputItemUnion {
			t.Helper()
			params := responses.ResponseNewParams{Model: model, Tools: weatherFunction, Store: openai.Bool(false)}
			keptInput := option.WithJSONSet("input", kept)
			if streamed {
				r := streamResponse(t, e, params, keptInput)
				if r.err != nil || r.terminal != "response.completed" {
					t.Fatalf("streamed %s: %v %q (sent %s)", model, r.err, r.terminal, home.LastRequest())
				}
				return r.final.Output
			}
			resp, err := e.Client("k").Responses.New(context.Background(), params, keptInput)
			if err != nil {
				t.Fatalf("whole %s: %v (sent %s)", model, err, home.LastRequest())
			}
			return resp.Output
		}
		for step := 1; step <= 3; step++ {
			out := send(gatewaytest.Start(t, homeSrv.URL, cfg), "think-toolloop")
			for _, it := range out {
				kept = append(kept, json.RawMessage(it.RawJSON()))
				switch it.Type {
				case "reasoning":
					if step < 3 && !strings.HasPrefix(it.EncryptedContent, "tg2.") {
						t.Fatalf("step %d: reasoning handed on unsealed: %s", step, it.RawJSON())
					}
				case "function_call":
					if !strings.HasPrefix(it.ID, "fc_sim_") {
						t.Errorf("step %d: the call's item id %q is not the upstream's", step, it.ID)
					}
					kept = append(kept, json.RawMessage(`{"type":"function_call_output","call_id":"`+it.CallID+`","output":"sunny"}`))
				}
			}
		}
		encrypted := 0
		for _, it := range lastInput(t, home) {
			if it.Type == "reasoning" {
				encrypted++
				if strings.HasPrefix(it.EncryptedContent, "tg2.") || it.EncryptedContent == "" {
					t.Errorf("the upstream was sent %q, not what it issued", it.EncryptedContent)
				}
			}
		}
		if encrypted != 2 {
			t.Errorf("streamed %v: %d reasoning items sent back, want 2: %s", streamed, encrypted, home.LastRequest())
		}
		e := gatewaytest.Start(t, homeSrv.URL, cfg)
		send(e, "away-toolloop")
		for _, it := range lastInput(t, away) {
			if it.Type == "reasoning" {
				t.Errorf("another organization's reasoning was sent: %+v", it)
			}
		}
		if n := e.Metric(t, "toolgate_repairs_total", map[string]string{"route": "away", "action": "dropped_foreign_reasoning"}); n != 2 {
			t.Errorf("dropped_foreign_reasoning = %v, want 2", n)
		}
	}
}

// A Responses client on a Responses upstream, item for item: OpenAI's
// hosted web_search tool is declared and used — its web_search_call item
// and the message with its url_citation annotation reach openai-go with
// the upstream's ids, streamed and whole — and the conversation sent back
// as the client keeps it reaches the simulator as the client sent it,
// which checks the call's action and that the reasoning item is followed
// by the item it preceded. Parts and members the chat model has no slot
// for (an input_file, truncation, include) go as sent. (The route allows
// web_search and stored files: hosted_tools, org_wide.)
func TestResponsesItemForItem(t *testing.T) {
	e, s := openaiResponsesEnv(t)
	tools := append([]responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: "web_search"}}}, weatherFunction...)
	for _, streamed := range []bool{true, false} {
		kept := []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"type":"input_text","text":"weather in Paris?"},{"type":"input_file","file_id":"file-abc"}]}`)}
		params := responses.ResponseNewParams{Model: "think-websearch", Tools: tools, Store: openai.Bool(false)}
		opts := []option.RequestOption{option.WithJSONSet("input", kept), option.WithJSONSet("truncation", "auto"),
			option.WithJSONSet("include", []string{"web_search_call.action.sources"})}
		var out []responses.ResponseOutputItemUnion
		if streamed {
			r := streamResponse(t, e, params, opts...)
			if r.err != nil || r.terminal != "response.completed" {
				t.Fatalf("streamed: %v %q (sent %s)", r.err, r.terminal, s.LastRequest())
			}
			out = r.final.Output
		} else {
			resp, err := e.Client("k").Responses.New(context.Background(), params, opts...)
			if err != nil {
				t.Fatalf("whole: %v (sent %s)", err, s.LastRequest())
			}
			out = resp.Output
		}
		var types []string
		for _, it := range out {
			types = append(types, it.Type)
			kept = append(kept, json.RawMessage(it.RawJSON()))
		}
		if got := strings.Join(types, " "); got != "reasoning web_search_call message" {
			t.Fatalf("streamed %v: output %s", streamed, got)
		}
		if ws, msg := out[1], out[2]; !strings.HasPrefix(ws.ID, "ws_sim_") || ws.Action.Query != "weather in Paris" || !strings.HasPrefix(msg.ID, "msg_sim_") ||
			len(msg.Content) != 1 || len(msg.Content[0].Annotations) != 1 || msg.Content[0].Annotations[0].URL != "https://weather.example/paris" {
			t.Errorf("streamed %v: %s %s", streamed, ws.RawJSON(), msg.RawJSON())
		}
		sent := string(s.LastRequest())
		for _, want := range []string{`{"type":"input_file","file_id":"file-abc"}`, `"truncation":"auto"`, `"include":["web_search_call.action.sources","reasoning.encrypted_content"]`,
			`{"type":"web_search"}`} {
			if !strings.Contains(sent, want) {
				t.Errorf("streamed %v: %s not sent as the client sent it: %s", streamed, want, sent)
			}
		}
		kept = append(kept, json.RawMessage(`{"role":"user","content":"and tomorrow?"}`))
		params.Model = "think-text"
		if _, err := e.Client("k").Responses.New(context.Background(), params, option.WithJSONSet("input", kept)); err != nil {
			t.Fatalf("streamed %v, the conversation sent back: %v (sent %s)", streamed, err, s.LastRequest())
		}
		if in := lastInput(t, s); len(in) < 4 || in[1].Type != "reasoning" || strings.HasPrefix(in[1].EncryptedContent, "tg2.") || in[2].Type != "web_search_call" || in[3].ID != out[2].ID {
			t.Errorf("streamed %v: sent %s", streamed, s.LastRequest())
		}
	}
}

// With upstream_store and upstream_previous, a previous_response_id goes
// to the upstream as its own id for the response, with only the new
// input: the simulator, which keeps its responses, puts the rest back and
// checks the whole conversation. Repair still applies to the new input (a
// result for an unknown call is dropped, then and on every later turn,
// without breaking the chain). By default the gateway expands the
// conversation and sends it whole.
func TestResponsesPreviousUpstream(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
responses: {store: memory}
upstreams: [{name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}]
routes:
  - {name: kept, model: "kept-*", upstream: oai, upstream_store: true, upstream_previous: true}
  - {name: expanded, model: "*", upstream: oai, upstream_store: true}
`)
	var sent struct {
		Previous string            `json:"previous_response_id"`
		Input    []json.RawMessage `json:"input"`
	}
	last := func() {
		sent.Previous, sent.Input = "", nil
		if err := json.Unmarshal(s.LastRequest(), &sent); err != nil {
			t.Fatal(err)
		}
	}
	for _, model := range []string{"kept-tool", "expanded-tool"} {
		first := streamResponse(t, e, responses.ResponseNewParams{Model: model, Input: input("weather?"), Tools: weatherFunction})
		if first.err != nil || first.terminal != "response.completed" {
			t.Fatalf("%s: %v", model, first.err)
		}
		var callID string
		for _, it := range first.final.Output {
			if it.Type == "function_call" {
				callID = it.CallID
			}
		}
		outputs := responses.ResponseInputParam{
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(callID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}},
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_gone"), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("?")}}},
		}
		second, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: model, PreviousResponseID: openai.String(first.final.ID),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}, Tools: weatherFunction})
		if err != nil || !strings.HasPrefix(second.OutputText(), "Hello") {
			t.Fatalf("%s, second: %v (sent %s)", model, err, s.LastRequest())
		}
		last()
		switch {
		case model == "kept-tool" && (!strings.HasPrefix(sent.Previous, "resp_sim_") || len(sent.Input) != 1 || !strings.Contains(string(sent.Input[0]), `"output":"sunny"`)):
			t.Errorf("kept: sent %s", s.LastRequest())
		case model == "expanded-tool" && (sent.Previous != "" || len(sent.Input) != 3):
			t.Errorf("expanded: sent %s", s.LastRequest())
		}
		third, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: model, PreviousResponseID: openai.String(second.ID),
			Input: input("thanks"), Tools: weatherFunction})
		if err != nil || third.Status != "completed" {
			t.Fatalf("%s, third: %v (sent %s)", model, err, s.LastRequest())
		}
		last()
		if model == "kept-tool" && (!strings.HasPrefix(sent.Previous, "resp_sim_") || len(sent.Input) != 1) {
			t.Errorf("kept, third: sent %s", s.LastRequest())
		}
	}
}

// The seal is keyed: encrypted reasoning handed to one client key goes
// back to its upstream from that key, through any replica that shares
// responses.seal_key — and from another key, through a replica with
// another secret, with a forged tag or never sealed, it is left out
// (dropped_foreign_reasoning), never sent on.
func TestSealKeyed(t *testing.T) {
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	defer up.Close()
	cfg := func(secret string) string {
		return `
responses: {seal_key: "` + secret + `"}
upstreams: [{name: a, protocol: responses, url: "UPSTREAM_URL/v1"}]
routes: [{name: think, model: "*", upstream: a, reasoning: {format: reasoning-effort, level: high}}]
keys:
  - {name: k1, sha256: ` + gatewaytest.KeyHash("sk-seal-1") + `}
  - {name: k2, sha256: ` + gatewaytest.KeyHash("sk-seal-2") + `}
`
	}
	first, replica, other := gatewaytest.Start(t, up.URL, cfg("the shared secret, 32 bytes long")),
		gatewaytest.Start(t, up.URL, cfg("the shared secret, 32 bytes long")), gatewaytest.Start(t, up.URL, cfg("another replica's secret, long"))
	_, body := first.Do(t, "POST", "/responses", `{"model":"think-tool","store":false,"input":"weather?","tools":[`+
		`{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`, "Authorization", "Bearer sk-seal-1")
	var resp struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Output) != 2 || !strings.Contains(string(resp.Output[0]), `"encrypted_content":"tg2.`) {
		t.Fatalf("%v %s", err, body)
	}
	var call struct {
		CallID string `json:"call_id"`
	}
	_ = json.Unmarshal(resp.Output[1], &call)
	sendBack := func(e *gatewaytest.Env, key string, reasoning json.RawMessage) (sentEncrypted bool) {
		t.Helper()
		input := `[{"role":"user","content":"weather?"},` + string(reasoning) + `,` + string(resp.Output[1]) +
			`,{"type":"function_call_output","call_id":"` + call.CallID + `","output":"sunny"}]`
		r, b := e.Do(t, "POST", "/responses", `{"model":"think-text","store":false,"input":`+input+`,"tools":[`+
			`{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`, "Authorization", "Bearer "+key)
		if r.StatusCode != 200 {
			t.Fatalf("%d %s (sent %s)", r.StatusCode, b, s.LastRequest())
		}
		for _, it := range lastInput(t, s) {
			if it.Type == "reasoning" && it.EncryptedContent != "" {
				return true
			}
		}
		return false
	}
	item := resp.Output[0]
	var sealed struct {
		EncryptedContent string `json:"encrypted_content"`
	}
	_ = json.Unmarshal(item, &sealed)
	tag, enc, _ := strings.Cut(strings.TrimPrefix(sealed.EncryptedContent, "tg2."), ".")
	with := func(content string) json.RawMessage {
		return json.RawMessage(strings.Replace(string(item), sealed.EncryptedContent, content, 1))
	}
	if !sendBack(first, "sk-seal-1", item) || !sendBack(replica, "sk-seal-1", item) {
		t.Errorf("the key's own item, through a replica sharing the secret, did not go back")
	}
	for name, c := range map[string]struct {
		e    *gatewaytest.Env
		key  string
		item json.RawMessage
	}{
		"another key":    {first, "sk-seal-2", item},
		"another secret": {other, "sk-seal-1", item},
		// Through the replica, whose own store holds nothing of the turn
		// (the first gateway would put back the item it remembers).
		"a forged tag": {replica, "sk-seal-1", with("tg2." + strings.Repeat("0", len(tag)) + "." + enc)},
		"never sealed": {replica, "sk-seal-1", with(enc)},
	} {
		if sendBack(c.e, c.key, c.item) {
			t.Errorf("%s: the encrypted content was sent on", name)
		}
	}
	if n := replica.Metric(t, "toolgate_repairs_total", map[string]string{"route": "think", "action": "dropped_foreign_reasoning"}); n < 1 {
		t.Errorf("dropped_foreign_reasoning counted %v", n)
	}
}
