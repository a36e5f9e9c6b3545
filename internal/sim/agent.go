package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// The agent script (a model name containing "agent", in every protocol's
// mode) answers as a coding agent's model does for "run a command and
// quote its output": when the request's last turn is a tool's result, a
// text answer quoting it (AgentReply); else, when the request declares a
// shell tool (Claude Code's Bash, Codex's exec_command or shell,
// opencode's bash), one call of it running AgentCommand, with the
// arguments its schema asks for; else (a title, a summary) a short text.
// The command's output, AgentOutput, appears nowhere in the command, so
// an answer that quotes it shows that the agent ran the tool.
const (
	AgentCommand = "echo toolgate-$((6*7))"
	AgentOutput  = "toolgate-42"
	// AgentReply starts the answer that quotes the tool's result.
	AgentReply = "The command printed: "
	// agentTitle is the answer to a request without a shell tool.
	agentTitle = "Run a command"
)

// agentTool is a declared tool as the agent script reads it.
type agentTool struct {
	Name   string
	Schema json.RawMessage
}

// shellTools are the shell tools of the agents, in the order preferred.
var shellTools = []string{"Bash", "bash", "exec_command", "shell", "shell_command"}

// agentCall is the call of the shell tool among tools: its name and
// arguments (a JSON object); ok is false when none is declared.
func agentCall(tools []agentTool) (name string, args json.RawMessage, ok bool) {
	k := -1
	for _, want := range shellTools {
		if k = slices.IndexFunc(tools, func(t agentTool) bool { return t.Name == want }); k >= 0 {
			break
		}
	}
	if k < 0 {
		return "", nil, false
	}
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(tools[k].Schema, &schema)
	in := map[string]any{}
	switch {
	case schema.Properties["cmd"].Type != "":
		in["cmd"] = AgentCommand
	case schema.Properties["command"].Type == "array":
		in["command"] = []string{"bash", "-lc", AgentCommand}
	default:
		in["command"] = AgentCommand
	}
	if _, ok := schema.Properties["description"]; ok {
		in["description"] = "Print the marker"
	}
	b, _ := json.Marshal(in)
	return tools[k].Name, b, true
}

// agentText is the agent script's text answer: the tool's result quoted
// (result is its text, or its JSON), or a title when there is none.
func agentText(result string, hasResult bool) string {
	if !hasResult {
		return agentTitle
	}
	result = strings.TrimSpace(result)
	if len(result) > 2000 {
		result = result[:2000]
	}
	return AgentReply + result
}

// resultText reads a tool result's content: a string, or the text of its
// parts or blocks, or else its JSON.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

// chatAgent answers a chat request with the agent script, streamed or
// whole; with reasoning (the thinking mode), with reasoning_content too.
func (s *Sim) chatAgent(w http.ResponseWriter, req *wire.ChatRequest, reasoning bool) {
	result, has := "", false
	if k := len(req.Messages) - 1; k >= 0 && req.Messages[k].Role == "tool" {
		result, has = resultText(req.Messages[k].Content), true
	}
	tools := make([]agentTool, 0, len(req.Tools))
	for _, t := range req.Tools {
		tools = append(tools, agentTool{Name: t.Name, Schema: t.Parameters})
	}
	n := s.seq.Add(1)
	id := fmt.Sprintf("chatcmpl-agent-%d", n)
	msg := map[string]any{"role": "assistant"}
	if reasoning {
		msg["reasoning_content"] = fmt.Sprintf("Thinking, step %d.", n)
	}
	finish := "stop"
	if name, args, ok := agentCall(tools); ok && !has {
		finish = "tool_calls"
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_agent_%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": string(args)}}}
	} else {
		msg["content"] = agentText(result, has)
	}
	usage := map[string]int{"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}
	if !req.Stream {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion", "created": 1700000000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	chunk := func(delta map[string]any, finish any, usage any) string {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["choices"], c["usage"] = []any{}, usage
		}
		b, _ := json.Marshal(c)
		return "data: " + string(b) + "\n\n"
	}
	out := chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if r, ok := msg["reasoning_content"]; ok {
		out += chunk(map[string]any{"reasoning_content": r}, nil, nil)
	}
	if calls, ok := msg["tool_calls"].([]any); ok {
		c := calls[0].(map[string]any)
		fn := c["function"].(map[string]any)
		out += chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": c["id"], "type": "function",
			"function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil, nil)
		for _, part := range pieces(fn["arguments"].(string), 3) {
			out += chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil, nil)
		}
	} else {
		for _, part := range pieces(msg["content"].(string), 3) {
			out += chunk(map[string]any{"content": part}, nil, nil)
		}
	}
	out += chunk(map[string]any{}, finish, nil) + chunk(nil, nil, usage) + "data: [DONE]\n\n"
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, out)
}
