package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// chartMemory is the Helm chart's memory limit (deploy/helm), 512Mi.
const chartMemory = 512 << 20

// The gateway fits the chart's memory limit with every store full: the
// gateway binary, told its container's limit (server.memory_limit, as
// it reads it from the cgroup in one), keeps Responses API responses in
// memory for six keys, each filling its share and the store its bound
// (a fifth of the limit), on an upstream whose remembered reasoning
// fills that store too (a tenth): 360 requests of 1 MB, each answered
// with 512 KB of reasoning. Its peak RSS stays under the limit (with the
// stores' former defaults, 256 MiB each, they would hold 436 MB and it
// passed it).
func TestMemoryFitsTheChart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway and sends 540 MB through it")
	}
	reasoning := strings.Repeat("r", 512<<10)
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":%q,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, n, reasoning, n)
	}))
	defer up.Close()

	dir := t.TempDir()
	bin := filepath.Join(dir, "toolgate")
	build := exec.Command("go", "build", "-pgo=off", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const keys, perKey = 6, 60
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\"\nserver: {memory_limit: %d}\nresponses: {store: memory}\nkeys:\n", chartMemory)
	for k := range keys {
		fmt.Fprintf(&cfg, "  - {name: k%d, sha256: %s}\n", k, gatewaytest.KeyHash(fmt.Sprintf("sk-%d", k)))
	}
	fmt.Fprintf(&cfg, "upstreams: [{name: up, url: %q, restore_reasoning: true}]\nroutes: [{model: \"*\", upstream: up}]\n", up.URL+"/v1")
	path := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no GOMEMLIMIT, no GOGC: the gateway's own settings
	stdout, _ := cmd.StdoutPipe()
	// The gateway's log goes to a file, read whenever the test reports it.
	logPath := filepath.Join(dir, "stderr")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	logs := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 4 && f[1] == "listening" {
				addr <- f[3]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(time.Minute):
		t.Fatalf("the gateway did not start: %s", logs())
	}

	input := strings.Repeat("x", 1<<20)
	c := &http.Client{Timeout: time.Minute}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for k := range keys {
		wg.Go(func() {
			for i := range perKey {
				body := fmt.Sprintf(`{"model":"m","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"input":[{"role":"user","content":"%d %s"}]}`, i, input)
				req, _ := http.NewRequest("POST", base+"/v1/responses", strings.NewReader(body))
				req.Header.Set("Authorization", fmt.Sprintf("Bearer sk-%d", k))
				resp, err := c.Do(req)
				if err != nil {
					failed.Add(1)
					t.Error(err)
					return
				}
				var out struct {
					Status string `json:"status"`
				}
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || json.Unmarshal(b.Bytes(), &out) != nil || out.Status != "completed" && out.Status != "incomplete" {
					failed.Add(1)
					t.Errorf("key %d, request %d: %d %.300s", k, i, resp.StatusCode, b.String())
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed; the gateway's log:\n%s", failed.Load(), logs())
	}
	peak := statusBytes(t, cmd.Process.Pid, "VmHWM:")
	t.Logf("%d requests of 1 MB, %d answers with 512 KB of reasoning: peak RSS %d MiB, the chart's limit %d MiB", keys*perKey, calls.Load(), peak>>20, chartMemory>>20)
	if peak >= chartMemory {
		t.Errorf("peak RSS %d MiB is over the chart's limit of %d MiB", peak>>20, chartMemory>>20)
	}
	if !strings.Contains(logs(), `"responses_max_bytes":107374182`) || !strings.Contains(logs(), `"reasoning_max_bytes":53687091`) {
		t.Errorf("the stores' bounds are not shares of the limit: %s", logs())
	}
}

// statusBytes reads a size field (VmHWM:, VmRSS:) of a process's
// /proc status, in bytes.
func statusBytes(t *testing.T, pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s %q", field, v)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
