package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wait"
)

// agentsConfig has a route per upstream protocol (and, for chat
// completions, a model that reasons and one that does not), each named
// as a user of the agents would name its model; every upstream model is
// the simulator's agent script, strict where it can be.
const agentsConfig = `
upstreams:
  - {name: chat, url: "UPSTREAM_URL/v1"}
  - {name: thinking, url: "UPSTREAM_URL/v1", restore_reasoning: true}
  - {name: anthropic, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: gemini, protocol: gemini, url: "UPSTREAM_URL/v1beta"}
  - {name: responses, protocol: responses, url: "UPSTREAM_URL/v1"}
routes:
  - {name: anthropic, model: "claude-sonnet-4-5", upstream: anthropic, upstream_model: "claude-agent"}
  - {name: chat, model: "gpt-4.1", upstream: chat, upstream_model: "sim-plain-strict-agent"}
  - {name: chat-reasoning, model: "deepseek-reasoner", upstream: thinking, upstream_model: "sim-deepseek-strict-agent"}
  - {name: gemini, model: "gemini-3-pro-preview", upstream: gemini, upstream_model: "gemini-agent", reasoning: {format: reasoning-effort, level: medium, client_effort: true}}
  - {name: responses, model: "gpt-5-codex", upstream: responses, upstream_model: "sim-reasoner-agent", reasoning: {format: reasoning-effort, level: medium, client_effort: true}}
`

// agentRoutes are the routes' client model names, and what the
// simulator must have been sent back on each for the loop to hold
// together (besides the tool's output): signed thinking, DeepSeek's
// reasoning, Gemini's thought signatures, encrypted reasoning.
var agentRoutes = []struct{ route, model, back string }{
	{"anthropic", "claude-sonnet-4-5", ""},
	{"chat", "gpt-4.1", ""},
	{"chat-reasoning", "deepseek-reasoner", `"reasoning_content"`},
	{"gemini", "gemini-3-pro-preview", `"thoughtSignature"`},
	{"responses", "gpt-5-codex", `"encrypted_content"`},
}

// agentBin is the path of an agent's command installed in
// clients/agents (npm install --no-save --prefix clients/agents); without it the test
// is skipped, except where TOOLGATE_REQUIRE_NODE is set.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	bin, _ := filepath.Abs(filepath.Join("../../clients/agents/node_modules/.bin", name))
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("TOOLGATE_REQUIRE_NODE") != "" {
			t.Fatalf("the agent tests need `npm install --no-save --prefix clients/agents`: %v", err)
		}
		t.Skip("the agents are not installed (npm install --no-save --prefix clients/agents)")
	}
	return bin
}

// agentSession is one agent run and what the gateway and the simulator
// saw of it.
type agentSession struct {
	out      string
	statuses []string
	sizes    []int64  // bytes_in of each request
	bodies   []string // what the simulator received
}

// runAgent runs an agent's command in a fresh home and working
// directory, offline but for the gateway, until it exits (within a
// deadline), and gathers the session's access lines and upstream bodies.
func runAgent(t *testing.T, g agentGateway, env []string, bin string, args ...string) agentSession {
	t.Helper()
	e, s := g.e, g.s
	home, work := t.TempDir(), t.TempDir()
	beforeLines, beforeBodies, beforeServed := len(e.Access()), len(s.Bodies()), g.served.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = work
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "NO_COLOR=1",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(home, ".local/state"),
		// Offline but for the gateway: anything else goes to a closed port.
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, out.String())
	}
	// Every request the agent made has its access line (written once its
	// response is).
	served := int(g.served.Load() - beforeServed)
	wait.For(t, "the session's access lines", func() bool { return len(e.Access())-beforeLines >= served })
	var sess agentSession
	sess.out = out.String()
	for _, l := range e.Access()[beforeLines:] {
		var size int64
		fmt.Sscan(fmt.Sprint(l["bytes_in"]), &size)
		sess.statuses, sess.sizes = append(sess.statuses, fmt.Sprint(l["status"])), append(sess.sizes, size)
	}
	for _, b := range s.Bodies()[beforeBodies:] {
		sess.bodies = append(sess.bodies, string(b))
	}
	return sess
}

// check asserts a session ran the tool and quoted its output, refused
// nothing, and sent the simulator the tool's output and want (the
// reasoning state the upstream needs back).
func (sess agentSession) check(t *testing.T, want string) {
	t.Helper()
	if !strings.Contains(sess.out, sim.AgentOutput) {
		t.Errorf("the agent did not quote the command's output:\n%s", sess.out)
	}
	for k, st := range sess.statuses {
		if st != "200" {
			t.Errorf("request %d of the session answered %s", k, st)
		}
	}
	sent := strings.Join(sess.bodies, "\n")
	if !strings.Contains(sent, sim.AgentOutput) {
		t.Errorf("the simulator never received the tool's output")
	}
	if want != "" && !strings.Contains(sent, want) {
		t.Errorf("the simulator never received %s back", want)
	}
	var largest int64
	for _, n := range sess.sizes {
		largest = max(largest, n)
	}
	t.Logf("%d requests, largest %d bytes", len(sess.statuses), largest)
}

// agentGateway is the gateway the agents use, in front of the simulator,
// reached through a proxy that counts the requests served.
type agentGateway struct {
	e      *gatewaytest.Env
	s      *sim.Sim
	addr   string
	served *atomic.Int64
}

func agentsEnv(t *testing.T) agentGateway {
	e, s := gatewaytest.StartSim(t, sim.Options{KeepBodies: true}, agentsConfig)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: e.Addr})
	proxy.FlushInterval = -1
	served := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(w, r)
		served.Add(1)
	}))
	t.Cleanup(srv.Close)
	return agentGateway{e: e, s: s, addr: srv.Listener.Addr().String(), served: served}
}

// Claude Code, unchanged, completes a tool loop on every route, thinking
// on (its default) and off: the Bash tool run, its output quoted, no
// request refused (its betas served), and what the upstream needs back
// sent back (signed thinking byte for byte, checked by the simulator).
func TestAgentClaudeCode(t *testing.T) {
	bin := agentBin(t, "claude")
	g := agentsEnv(t)
	for _, r := range agentRoutes {
		for _, thinking := range []string{"on", "off"} {
			t.Run(r.route+"/thinking="+thinking, func(t *testing.T) {
				env := []string{"ANTHROPIC_BASE_URL=http://" + g.addr, "ANTHROPIC_API_KEY=sk-agent", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
					"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "ANTHROPIC_SMALL_FAST_MODEL=" + r.model,
					"ANTHROPIC_DEFAULT_HAIKU_MODEL=" + r.model}
				want := r.back
				if thinking == "off" {
					env = append(env, "MAX_THINKING_TOKENS=0")
				} else if r.route == "anthropic" {
					want = `"signature":"` // its signed thinking, sent back
				}
				sess := runAgent(t, g, env, bin, "-p", "Run the command and quote its output.", "--model", r.model,
					"--allowedTools", "Bash", "--output-format", "json")
				var result struct {
					IsError bool   `json:"is_error"`
					Result  string `json:"result"`
				}
				lines := strings.Split(strings.TrimSpace(sess.out), "\n")
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &result); err != nil || result.IsError {
					t.Fatalf("claude: %v\n%s", err, sess.out)
				}
				sess.check(t, want)
			})
		}
	}
}

// Codex, in its stock configuration (its namespace and web_search tools
// declared) with reasoning, completes a tool loop on every route.
func TestAgentCodex(t *testing.T) {
	bin := agentBin(t, "codex")
	g := agentsEnv(t)
	for _, r := range agentRoutes {
		t.Run(r.route, func(t *testing.T) {
			config := fmt.Sprintf(`model = %q
model_provider = "toolgate"
model_reasoning_effort = "medium"
[model_providers.toolgate]
name = "toolgate"
base_url = "http://%s/v1"
env_key = "TOOLGATE_KEY"
wire_api = "responses"
`, r.model, g.addr)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			sess := runAgent(t, g, []string{"CODEX_HOME=" + dir, "TOOLGATE_KEY=sk-agent"}, bin,
				"exec", "--skip-git-repo-check", "-s", "danger-full-access", "Run the command and quote its output.")
			sess.check(t, r.back)
			if r.route != "responses" && !strings.Contains(strings.Join(sess.bodies, "\n"), "multi_agent_v1__") {
				t.Errorf("Codex's namespace tool did not reach the upstream flattened")
			}
		})
	}
}

// opencode completes a tool loop on every route, through its
// OpenAI-compatible provider (chat completions).
func TestAgentOpencode(t *testing.T) {
	bin := agentBin(t, "opencode")
	g := agentsEnv(t)
	for _, r := range agentRoutes {
		t.Run(r.route, func(t *testing.T) {
			config := fmt.Sprintf(`{"provider":{"toolgate":{"npm":"@ai-sdk/openai-compatible","name":"toolgate",
"options":{"baseURL":"http://%s/v1","apiKey":"sk-agent"},"models":{%q:{"tool_call":true}}}},"autoupdate":false,"share":"disabled"}`, g.addr, r.model)
			dir := t.TempDir()
			path := filepath.Join(dir, "opencode.json")
			if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			sess := runAgent(t, g, []string{"OPENCODE_CONFIG=" + path, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"}, bin,
				"run", "-m", "toolgate/"+r.model, "Run the command and quote its output.")
			sess.check(t, r.back)
		})
	}
}
