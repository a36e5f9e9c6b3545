package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The simulator's Responses mode, on its own reading of OpenAI's wire:
// POST /v1/responses answers as OpenAI's Responses API does — the
// documented event sequence with sequence_numbers, or the response object
// — and checks every request first, answering OpenAI's wording:
//
//   - a function_call_output must answer an earlier function_call
//     ("No tool call found for function call output with call_id …"),
//     and a function_call must be answered ("No tool output found …");
//   - a reasoning item must be followed by the item it preceded ("Item
//     'rs_…' of type 'reasoning' was provided without its required
//     following item."), and a function_call sent with its item id by the
//     reasoning item it followed ("… without its required 'reasoning'
//     item: 'rs_…'.");
//   - a reasoning item's encrypted_content must be the one this simulator's
//     organization (Options.Org) issued for it (invalid_encrypted_content
//     otherwise); with store: false, a reasoning item without it is
//     unknown ("Item with id 'rs_…' not found.").
//
// A request with a reasoning effort (other than none) is answered with a
// reasoning item first: its summary when reasoning.summary is set, its
// encrypted_content when include asks for reasoning.encrypted_content.
// The model name picks the script, as for chat completions: error-NNN
// (429 with retry-after), cut (the stream drops before it completes),
// incomplete (max_output_tokens), parallel, toolloop (calls until the
// input holds two outputs), tool, websearch (the hosted web_search tool,
// which the request must declare: a web_search_call item, then text with
// a url_citation annotation; a web_search_call sent back must carry its
// action, as it was issued), else text. A response made with store: true
// (the default) is kept, and previous_response_id continues it: its input
// and output items go in front of the request's, and the rules above
// apply to the whole.

type responsesRequest struct {
	Model   string            `json:"model"`
	Input   json.RawMessage   `json:"input"`
	Stream  bool              `json:"stream"`
	Store   *bool             `json:"store"`
	Include []string          `json:"include"`
	Tools   []json.RawMessage `json:"tools"`
	// PreviousResponseID continues a response kept with store: true.
	PreviousResponseID string `json:"previous_response_id"`
	Reason             *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
}

type responsesItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	CallID           string          `json:"call_id"`
	Action           json.RawMessage `json:"action"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent string          `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// org is the organization whose key seals encrypted reasoning.
func (s *Sim) org() string {
	if s.opts.Org != "" {
		return s.opts.Org
	}
	return "org-sim"
}

// seal is the encrypted_content the simulator's organization issues for a
// reasoning item.
func (s *Sim) seal(id, summary string) string {
	h := hmac.New(sha256.New, []byte("toolgate-sim-responses\x00"+s.org()))
	h.Write([]byte(id + "\x00" + summary))
	return "gAAAA" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func (s *Sim) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if _, err := s.receiveJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request.")
		return
	}
	var raws []json.RawMessage
	if len(req.Input) > 0 && req.Input[0] == '[' {
		if json.Unmarshal(req.Input, &raws) != nil {
			writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "input", "Invalid input: expected an array of items.")
			return
		}
	}
	if id := req.PreviousResponseID; id != "" {
		s.mu.Lock()
		prev, ok := s.stored[id]
		s.mu.Unlock()
		if !ok {
			writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "previous_response_id", fmt.Sprintf("Previous response with id '%s' not found.", id))
			return
		}
		raws = append(slices.Clone(prev), raws...)
	}
	items := make([]responsesItem, len(raws))
	for i, raw := range raws {
		if json.Unmarshal(raw, &items[i]) != nil {
			writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "input", fmt.Sprintf("Invalid input: input[%d] is not an item.", i))
			return
		}
	}
	if strings.Contains(req.Model, "plain") && req.Reason != nil && req.Reason.Effort != "" {
		// A model that does not reason (gpt-4.1, gpt-4o), in OpenAI's words.
		writeErrorCode(w, http.StatusBadRequest, "invalid_request_error", "reasoning.effort", "unsupported_parameter", "Unsupported parameter: 'reasoning.effort' is not supported with this model.")
		return
	}
	if strings.Contains(req.Model, "websearch") && !slices.ContainsFunc(req.Tools, func(t json.RawMessage) bool {
		return strings.Contains(string(t), `"type":"web_search`)
	}) {
		writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "tools", "The websearch script answers with the web_search tool: declare it in tools.")
		return
	}
	if status, code, msg := s.checkResponses(items, req.Store == nil || *req.Store); msg != "" {
		writeErrorCode(w, status, "invalid_request_error", "input", code, msg)
		return
	}
	if status, ok := errorScript(req.Model); ok {
		if status == 429 {
			w.Header().Set("Retry-After", "1")
			writeError(w, 429, "rate_limit_error", "Rate limit reached for requests.")
		} else {
			writeError(w, status, "server_error", "The server had an error while processing your request.")
		}
		return
	}
	a := s.responsesAnswer(&req, items)
	if req.Store == nil || *req.Store {
		kept := slices.Clone(raws)
		for _, o := range a.output {
			b, _ := json.Marshal(o)
			kept = append(kept, b)
		}
		s.mu.Lock()
		if s.stored == nil {
			s.stored = map[string][]json.RawMessage{}
		}
		s.stored[a.id] = kept
		s.mu.Unlock()
	}
	if !req.Stream {
		b, _ := json.Marshal(a.object(a.status))
		writeWhole(w, b, strings.Contains(req.Model, "cut"))
		return
	}
	s.responsesStream(w, r, a)
}

// checkResponses applies the rules above; it returns the status, code and
// message of the first broken one, or "".
func (s *Sim) checkResponses(items []responsesItem, store bool) (int, string, string) {
	calls := map[string]int{}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			calls[it.CallID] = i
			if need, ok := strings.CutPrefix(it.ID, "fc_sim_"); ok {
				rs := "rs_sim_" + need[:strings.LastIndex(need, "_")]
				if !slices.ContainsFunc(items[:i], func(p responsesItem) bool { return p.ID == rs }) {
					return 400, "", fmt.Sprintf("Item '%s' of type 'function_call' was provided without its required 'reasoning' item: '%s'.", it.ID, rs)
				}
			}
		case "function_call_output":
			if _, ok := calls[it.CallID]; !ok {
				return 400, "", "No tool call found for function call output with call_id " + it.CallID + "."
			}
			delete(calls, it.CallID)
		case "reasoning":
			if status, code, msg := s.checkReasoning(items, i, store); msg != "" {
				return status, code, msg
			}
		case "web_search_call":
			var a struct {
				Query string `json:"query"`
			}
			if json.Unmarshal(it.Action, &a) != nil || a.Query == "" {
				return 400, "", fmt.Sprintf("Missing required parameter: 'input[%d].action'.", i)
			}
		}
	}
	for id := range calls {
		return 400, "", "No tool output found for function call " + id + "."
	}
	return 0, "", ""
}

// checkReasoning checks reasoning item i: its encrypted content, and the
// item that must follow it.
func (s *Sim) checkReasoning(items []responsesItem, i int, store bool) (int, string, string) {
	it := items[i]
	var summary strings.Builder
	for _, p := range it.Summary {
		summary.WriteString(p.Text)
	}
	switch {
	case it.EncryptedContent == "" && !store:
		return 404, "", fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.ID)
	case it.EncryptedContent != "" && it.EncryptedContent != s.seal(it.ID, summary.String()):
		return 400, "invalid_encrypted_content", fmt.Sprintf("The encrypted content for item %s could not be verified.", it.ID)
	}
	n, _ := strings.CutPrefix(it.ID, "rs_sim_")
	if i+1 >= len(items) || !strings.HasPrefix(items[i+1].ID, "fc_sim_"+n+"_") && items[i+1].ID != "msg_sim_"+n && items[i+1].ID != "ws_sim_"+n {
		return 400, "", fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID)
	}
	return 0, "", ""
}

// responsesAnswer is a script's answer.
type responsesAnswer struct {
	id, model, status string
	output            []map[string]any
	created           int64
	usage             map[string]any
	cut               bool
}

func (s *Sim) responsesAnswer(req *responsesRequest, items []responsesItem) responsesAnswer {
	outputs := 0
	for _, it := range items {
		if it.Type == "function_call_output" {
			outputs++
		}
	}
	n := strconv.FormatInt(s.seq.Add(1), 10)
	a := responsesAnswer{id: "resp_sim_" + n, model: req.Model, status: "completed", created: time.Now().Unix(), cut: strings.Contains(req.Model, "cut")}
	reasoning := 0
	if req.Reason != nil && req.Reason.Effort != "" && req.Reason.Effort != "none" {
		reasoning = 7
		text := fmt.Sprintf("Thinking about it, step %d.", outputs+1)
		item := map[string]any{"type": "reasoning", "id": "rs_sim_" + n, "summary": []any{}}
		if req.Reason.Summary != "" {
			item["summary"] = []any{map[string]string{"type": "summary_text", "text": text}}
		} else {
			text = ""
		}
		if slices.Contains(req.Include, "reasoning.encrypted_content") {
			item["encrypted_content"] = s.seal("rs_sim_"+n, text)
		}
		a.output = append(a.output, item)
	}
	a.usage = map[string]any{"input_tokens": 20, "input_tokens_details": map[string]int{"cached_tokens": 5},
		"output_tokens": 12, "output_tokens_details": map[string]int{"reasoning_tokens": reasoning}, "total_tokens": 32}
	tool := "get_weather"
	if len(req.Tools) > 0 {
		var t struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(req.Tools[0], &t)
		tool = t.Name
	}
	call := func(k int, city string) map[string]any {
		prefix := "fc_simnr_"
		if reasoning > 0 {
			prefix = "fc_sim_"
		}
		return map[string]any{"type": "function_call", "id": prefix + n + "_" + strconv.Itoa(k), "call_id": "call_sim_" + n + "_" + strconv.Itoa(k),
			"name": tool, "arguments": `{"city":"` + city + `"}`, "status": "completed"}
	}
	if strings.Contains(req.Model, "agent") {
		a.output = append(a.output, responsesAgent(req, items, n, reasoning > 0))
		return a
	}
	switch m := req.Model; {
	case strings.Contains(m, "parallel") && outputs == 0:
		a.output = append(a.output, call(0, "Paris"), call(1, "Rome"))
	case strings.Contains(m, "toolloop") && outputs < 2, strings.Contains(m, "tool") && !strings.Contains(m, "toolloop") && outputs == 0:
		a.output = append(a.output, call(0, "Paris"))
	case strings.Contains(m, "websearch") && outputs == 0:
		a.output = append(a.output, map[string]any{"type": "web_search_call", "id": "ws_sim_" + n, "status": "completed",
			"action": map[string]any{"type": "search", "query": "weather in Paris"}},
			map[string]any{"type": "message", "id": "msg_sim_" + n, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": answer, "annotations": []any{
					map[string]any{"type": "url_citation", "url": "https://weather.example/paris", "title": "Paris weather", "start_index": 0, "end_index": 5}}}}})
	default:
		a.output = append(a.output, map[string]any{"type": "message", "id": "msg_sim_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": answer, "annotations": []any{}}}})
		if strings.Contains(m, "incomplete") {
			a.status = "incomplete"
		}
	}
	return a
}

// responsesAgent is the agent script's answer item (agent.go).
func responsesAgent(req *responsesRequest, items []responsesItem, n string, reasoned bool) map[string]any {
	result, has := "", false
	if k := len(items) - 1; k >= 0 && items[k].Type == "function_call_output" {
		result, has = resultText(items[k].Output), true
	}
	var tools []agentTool
	for _, raw := range req.Tools {
		var t struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Type == "function" {
			tools = append(tools, agentTool{Name: t.Name, Schema: t.Parameters})
		}
	}
	if name, args, ok := agentCall(tools); ok && !has {
		prefix := "fc_simnr_"
		if reasoned {
			prefix = "fc_sim_"
		}
		return map[string]any{"type": "function_call", "id": prefix + n + "_0", "call_id": "call_sim_" + n + "_0",
			"name": name, "arguments": string(args), "status": "completed"}
	}
	return map[string]any{"type": "message", "id": "msg_sim_" + n, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": agentText(result, has), "annotations": []any{}}}}
}

// object is the response object with status.
func (a responsesAnswer) object(status string) map[string]any {
	o := map[string]any{"id": a.id, "object": "response", "created_at": a.created, "status": status, "model": a.model,
		"output": a.output, "error": nil, "incomplete_details": nil, "usage": nil}
	if status != "in_progress" {
		o["usage"] = a.usage
	}
	if status == "incomplete" {
		o["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	}
	if status == "in_progress" {
		o["output"] = []any{}
	}
	return o
}

// responsesStream sends the answer as the Responses API streams it.
func (s *Sim) responsesStream(w http.ResponseWriter, r *http.Request, a responsesAnswer) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var events []map[string]any
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		events = append(events, v)
	}
	ev("response.created", map[string]any{"response": a.object("in_progress")})
	ev("response.in_progress", map[string]any{"response": a.object("in_progress")})
	for i, item := range a.output {
		responsesItemEvents(ev, i, item)
	}
	ev("response."+a.status, map[string]any{"response": a.object(a.status)})
	for k, e := range events {
		if a.cut && k == len(events)-1 {
			panic(http.ErrAbortHandler) // the connection drops before the response completes
		}
		e["sequence_number"] = k
		b, _ := json.Marshal(e)
		if !s.send(w, r, k, s.opts.ChunkDelay, []byte("event: "+e["type"].(string)+"\ndata: "+string(b)+"\n\n")) {
			return
		}
	}
}

// responsesItemEvents are one output item's events: added, its parts and
// deltas, done.
func responsesItemEvents(ev func(string, map[string]any), i int, item map[string]any) {
	id := item["id"]
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	switch item["type"] {
	case "message":
		added["content"], added["status"] = []any{}, "in_progress"
	case "function_call":
		added["arguments"], added["status"] = "", "in_progress"
	case "reasoning":
		added["summary"] = []any{}
	}
	ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
	switch item["type"] {
	case "message":
		text := item["content"].([]any)[0].(map[string]any)["text"].(string)
		ev("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, p := range pieces(text, 4) {
			ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": p})
		}
		ev("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
		ev("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
	case "function_call":
		args := item["arguments"].(string)
		for _, p := range pieces(args, 3) {
			ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": p})
		}
		ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
	case "reasoning":
		for _, sum := range item["summary"].([]any) {
			text := sum.(map[string]string)["text"]
			ev("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
			for _, p := range pieces(text, 3) {
				ev("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "delta": p})
			}
			ev("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "text": text})
			ev("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": text}})
		}
	}
	ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
}
