package gateway_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// nodeResult is what clients/node/stream.mjs printed.
type nodeResult struct {
	Helper struct {
		Content   *string `json:"content"`
		Reasoning *string `json:"reasoning"`
		Finish    string  `json:"finish"`
		Calls     []struct {
			ID, Name, Arguments string
		} `json:"calls"`
		Error string `json:"error"`
	} `json:"helper"`
	Chunks struct {
		LastFinish *string `json:"lastFinish"`
		Content    string  `json:"content"`
		Error      string  `json:"error"`
	} `json:"chunks"`
}

// runNode streams model through the gateway with the official OpenAI Node
// SDK (clients/node). Without node or the SDK installed (npm ci --prefix
// clients/node) the test is skipped, except where TOOLGATE_REQUIRE_NODE is
// set (.ci/run sets it once it has installed the SDK): there it fails.
func runNode(t *testing.T, baseURL, model string) nodeResult {
	t.Helper()
	dir, _ := filepath.Abs("../../clients/node")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil || serr != nil {
		if os.Getenv("TOOLGATE_REQUIRE_NODE") != "" {
			t.Fatalf("the Node SDK tests need node and `npm ci --prefix clients/node`: %v %v", err, serr)
		}
		t.Skip("node or the OpenAI Node SDK is not installed (npm ci --prefix clients/node)")
	}
	out, err := exec.Command(node, filepath.Join(dir, "stream.mjs"), baseURL, model).Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var r nodeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node printed %s: %v", out, err)
	}
	return r
}

// The official Node SDK reads the A31 and post-finish streams right through
// the gateway: its helper's message has the text (not "[object Object]"),
// the reasoning and the finish reason, and code that keeps the last
// chunk's finish_reason sees the real one. Against the same upstreams
// passed on as they came (strict), it does not — what the normalization is
// for.
func TestNodeSDKDialects(t *testing.T) {
	e := dialectEnv(t)
	r := runNode(t, e.URL, "sim-q-blocks")
	if h := r.Helper; h.Error != "" || h.Content == nil || *h.Content != "Looking it up." || h.Reasoning == nil || *h.Reasoning == "" || h.Finish != "tool_calls" || len(h.Calls) != 1 {
		t.Errorf("A31, helper: %+v", r.Helper)
	}
	if r.Chunks.Error != "" || r.Chunks.Content != "Looking it up." {
		t.Errorf("A31, chunks: %+v", r.Chunks)
	}
	if s := runNode(t, e.URL, "strict-blocks"); s.Chunks.Content == "Looking it up." {
		t.Errorf("A31 passed on as it came read right: %+v (the test shows nothing)", s.Chunks)
	}
	for _, script := range []string{"postfinish", "postusage"} {
		r := runNode(t, e.URL, "sim-q-"+script)
		if r.Helper.Error != "" || r.Helper.Finish != "tool_calls" || len(r.Helper.Calls) != 1 || r.Chunks.LastFinish == nil || *r.Chunks.LastFinish != "tool_calls" {
			t.Errorf("%s: %+v %+v", script, r.Helper, r.Chunks)
		}
		if s := runNode(t, e.URL, "strict-"+script); s.Chunks.LastFinish != nil && *s.Chunks.LastFinish == "tool_calls" {
			t.Errorf("%s passed on as it came ended with the finish reason: %+v (the test shows nothing)", script, s.Chunks)
		}
	}
}

// runNodeScript runs a script of clients/node and decodes what it printed.
func runNodeScript(t *testing.T, script string, v any, args ...string) {
	t.Helper()
	dir, _ := filepath.Abs("../../clients/node")
	node, err := exec.LookPath("node")
	_, serr := os.Stat(filepath.Join(dir, "node_modules", "ai"))
	if _, aerr := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "sdk")); serr == nil {
		serr = aerr
	}
	if err != nil || serr != nil {
		if os.Getenv("TOOLGATE_REQUIRE_NODE") != "" {
			t.Fatalf("the Node client tests need node and `npm ci --prefix clients/node`: %v %v", err, serr)
		}
		t.Skip("node or the Node clients are not installed (npm ci --prefix clients/node)")
	}
	out, err := exec.Command(node, append([]string{filepath.Join(dir, script)}, args...)...).Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("node %s printed %s: %v", script, out, err)
	}
}

// The official OpenAI Node SDK and the Vercel AI SDK's OpenAI Responses
// provider both read a streamed Responses API tool call through the
// gateway: the event sequence their parsers check, one complete call.
func TestNodeResponses(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	for _, model := range []string{"sim-tool", "claude-tool"} {
		var r struct {
			Node struct {
				Status string   `json:"status"`
				Types  []string `json:"types"`
				Calls  []struct {
					CallID, Name, Arguments string
				} `json:"calls"`
				Error string `json:"error"`
			} `json:"node"`
			AISDK struct {
				Calls []struct {
					ID, Name string
					Input    map[string]any
				} `json:"calls"`
				Errors []string `json:"errors"`
				Finish string   `json:"finish"`
				Error  string   `json:"error"`
			} `json:"aisdk"`
		}
		runNodeScript(t, "responses.mjs", &r, e.URL, model)
		if n := r.Node; n.Error != "" || n.Status != "completed" || len(n.Calls) != 1 || n.Calls[0].Name != "get_weather" || n.Calls[0].Arguments != `{"city":"Paris"}` || n.Types[len(n.Types)-1] != "response.completed" {
			t.Errorf("%s: the OpenAI Node SDK saw %+v", model, n)
		}
		if a := r.AISDK; a.Error != "" || len(a.Errors) > 0 || len(a.Calls) != 1 || a.Calls[0].Name != "get_weather" || a.Calls[0].Input["city"] != "Paris" || a.Finish != "tool-calls" {
			t.Errorf("%s: the Vercel AI SDK saw %+v", model, a)
		}
	}
}
