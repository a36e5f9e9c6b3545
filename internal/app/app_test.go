package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/testing/wait"
)

// allLogs collects every log line the runs of this package wrote.
var allLogs syncBuffer

// TestMain runs the tests, then checks that no run logged the upstream
// key, and that no goroutine is left.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && strings.Contains(allLogs.String(), "sk-upstream") {
		println("secrets check: the upstream key was logged")
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

// run is Run with its world's parts passed one by one.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return Run(ctx, args, World{Getenv: getenv, Stdout: stdout, Stderr: stderr})
}

// started runs run() in the background and returns the main and admin
// addresses once it reports them.
func started(t *testing.T, ctx context.Context, args []string, getenv func(string) string) (mainAddr, adminAddr string, done <-chan error, logs *syncBuffer) {
	t.Helper()
	pr, pw := io.Pipe()
	logs = &syncBuffer{}
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, args, getenv, pw, io.MultiWriter(logs, &allLogs))
		pw.Close()
		errc <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("run did not report its address: %v (logs: %s)", err, logs)
	}
	go io.Copy(io.Discard, pr)
	if _, err := fmt.Sscanf(line, "toolgate listening on %s (admin %s", &mainAddr, &adminAddr); err != nil {
		t.Fatalf("unexpected first line %q", line)
	}
	return mainAddr, strings.TrimSuffix(adminAddr, ")"), errc, logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// SIGTERM (the context ending) stops new work, reports not ready, lets an
// in-flight stream finish with [DONE], then run returns.
func TestDrain(t *testing.T) {
	release := make(chan struct{})
	first := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		close(first)
		<-release
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
server: {drain_timeout: 60s}
upstreams: [{name: up, url: "%s/v1", api_key: "${KEY}"}]
routes: [{model: "*", upstream: up}]
`, up.URL)), 0o600)
	env := func(k string) string { return map[string]string{"TOOLGATE_CONFIG": cfg, "KEY": "sk-upstream-drain"}[k] }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mainAddr, adminAddr, done, logs := started(t, ctx, []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, env)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	if code := get(t, c, "http://"+adminAddr+"/readyz"); code != 200 {
		t.Fatalf("readyz %d", code)
	}

	resp, err := c.Post("http://"+mainAddr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-first
	cancel() // as SIGTERM does
	wait.For(t, "readyz to answer 503 while draining", func() bool { return get(t, c, "http://"+adminAddr+"/readyz") == 503 })
	close(release)
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("in-flight stream did not finish: %q %v", body, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"access"`) || !strings.Contains(logs.String(), `"msg":"stopped"`) ||
		!strings.Contains(logs.String(), "the gateway is open") {
		t.Errorf("logs: %s", logs)
	}
}

// An invalid config file stops start-up with an error naming the field.
func TestInvalidConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(cfg, []byte("upstreams: [{name: a}]\nroutes: [{model: m, upstream: b}]\n"), 0o600)
	err := run(context.Background(), []string{"--config", cfg}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "upstreams[0].url: is required") ||
		!strings.Contains(err.Error(), `routes[0].upstream: "b" is not the name`) {
		t.Fatalf("err = %v", err)
	}
}

// SIGHUP reloads the config file: new routes serve at once, a request in
// flight finishes on the config it started with, and an invalid file is
// refused with its reason logged while the running config stays.
func TestReload(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		if strings.Contains(string(body), `"held"`) {
			held <- struct{}{}
			<-release
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	write := func(routes string) {
		os.WriteFile(cfg, []byte(fmt.Sprintf("upstreams: [{name: up, url: \"%s/v1\"}]\nroutes: %s\n", up.URL, routes)), 0o600)
	}
	write(`[{model: a, upstream: up}, {model: held, upstream: up}]`)
	env := func(k string) string { return map[string]string{"TOOLGATE_CONFIG": cfg}[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mainAddr, _, done, logs := started(t, ctx, []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, env)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	post := func(model string) (int, string) {
		resp, err := c.Post("http://"+mainAddr+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post("b"); code != 404 {
		t.Fatalf("model b before the reload: %d", code)
	}
	inFlight := make(chan string, 1)
	go func() { _, body := post("held"); inFlight <- body }()
	<-held

	write(`[{model: b, upstream: up}]`)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	wait.For(t, "model b to be served after SIGHUP", func() bool { code, _ := post("b"); return code == 200 })
	if code, _ := post("a"); code != 404 {
		t.Errorf("model a after the reload: %d", code)
	}
	close(release)
	if body := <-inFlight; !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("the request in flight did not finish on its config: %q", body)
	}

	write(`[{model: b, upstream: nope}]`)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	wait.For(t, "the refused reload to be logged", func() bool { return strings.Contains(logs.String(), "config reload refused") })
	if !strings.Contains(logs.String(), `routes[0].upstream`) {
		t.Errorf("the refusal does not name the field: %s", logs)
	}
	if code, _ := post("b"); code != 200 {
		t.Errorf("model b after a refused reload: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Reloads under load: streams keep succeeding while the config is
// reloaded again and again.
func TestReloadUnderLoad(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for range 5 {
			io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	write := func(n int) {
		os.WriteFile(cfg, []byte(fmt.Sprintf("server: {drain_timeout: 60s}\nupstreams: [{name: up, url: \"%s/v1\"}]\nroutes: [{name: r%d, model: \"*\", upstream: up}]\n", up.URL, n)), 0o600)
	}
	write(0)
	env := func(k string) string { return map[string]string{"TOOLGATE_CONFIG": cfg}[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mainAddr, _, done, logs := started(t, ctx, []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-flush-interval", "0s"}, env)
	tr := &http.Transport{MaxIdleConnsPerHost: 20}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range 10 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Post("http://"+mainAddr+"/v1/chat/completions", "application/json",
					strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
				if err != nil {
					failed.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && strings.HasSuffix(string(b), "data: [DONE]\n\n") {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	// Each reload takes effect before the next is asked for: the access
	// log names its route.
	for i := 1; i <= 5; i++ {
		write(i)
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		route := fmt.Sprintf(`"route":"r%d"`, i)
		wait.For(t, fmt.Sprintf("reload %d to take effect", i), func() bool { return strings.Contains(logs.String(), route) })
	}
	close(stop)
	wg.Wait()
	if failed.Load() > 0 || ok.Load() == 0 {
		t.Errorf("%d streams failed, %d succeeded across 5 reloads", failed.Load(), ok.Load())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "config reloaded"); n != 5 {
		t.Errorf("%d reloads logged, want 5", n)
	}
}

// `toolgate check` loads a config as the gateway would and reports every
// problem with its field path (an error: exit 1), or that it is valid,
// without starting anything.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("upstreams: [{name: a, url: \"https://api.openai.com/v1\", api_key: \"${KEY}\"}]\nroutes: [{model: \"*\", upstream: a}]\n"), 0o600)
	os.WriteFile(bad, []byte("upstreams: [{name: c, protocol: anthropic, url: \"https://api.anthropic.com\"}]\nroutes: [{model: m, upstream: c, repair: maybe}]\n"), 0o600)
	var out strings.Builder
	if err := run(context.Background(), []string{"check", "--config", good}, func(k string) string { return map[string]string{"KEY": "sk-x"}[k] }, &out, io.Discard); err != nil || !strings.Contains(out.String(), "good.yaml: valid (1 upstreams, 1 routes, 0 client keys)") {
		t.Errorf("a valid config: %v %q", err, out.String())
	}
	err := run(context.Background(), []string{"check", "--config", bad}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "upstreams[0].url: must end with the API version") || !strings.Contains(err.Error(), `routes[0].repair: must be fix, reject or off, got "maybe"`) {
		t.Errorf("an invalid config: %v", err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil {
		t.Error("an unknown command ran")
	}
	if err := run(context.Background(), []string{"demo"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "cmd/demo") {
		t.Errorf("toolgate demo does not say where the demo went: %v", err)
	}
	// An upstream authenticated by a cloud's credentials is not said to
	// lack a key: check says where they are looked for.
	cloud := filepath.Join(dir, "cloud.yaml")
	os.WriteFile(cloud, []byte("upstreams: [{name: v, protocol: gemini, url: \"https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google\", auth: google}]\nroutes: [{model: \"*\", upstream: v}]\n"), 0o600)
	out.Reset()
	if err := run(context.Background(), []string{"check", "--config", cloud}, func(string) string { return "" }, &out, io.Discard); err != nil ||
		strings.Contains(out.String(), "no api_key") || !strings.Contains(out.String(), "upstream v authenticates with google credentials") {
		t.Errorf("a cloud's credentials: %v %q", err, out.String())
	}
	// A Responses upstream without responses.seal_key: check says what
	// that means; with one, nothing.
	for secret, note := range map[string]bool{"": true, "responses: {seal_key: \"a secret all replicas share\"}\n": false} {
		cfg := filepath.Join(dir, "responses.yaml")
		os.WriteFile(cfg, []byte(secret+"upstreams: [{name: r, protocol: responses, url: \"https://api.openai.com/v1\"}]\nroutes: [{model: \"*\", upstream: r}]\n"), 0o600)
		var out strings.Builder
		if err := run(context.Background(), []string{"check", "--config", cfg}, func(string) string { return "" }, &out, io.Discard); err != nil || strings.Contains(out.String(), "seal_key is not set") != note {
			t.Errorf("seal_key %q: %v %q", secret, err, out.String())
		}
	}
	// The console on an admin listener beyond loopback without a token:
	// check says who sees what.
	for extra, note := range map[string]bool{"admin_listen: \":9090\"\n": true, "admin_listen: \":9090\"\nconsole: {token: t}\n": false, "": false} {
		cfg := filepath.Join(dir, "console.yaml")
		os.WriteFile(cfg, []byte(extra+"upstreams: [{name: a, url: \"https://api.openai.com/v1\", api_key: k}]\nroutes: [{model: \"*\", upstream: a}]\n"), 0o600)
		var out strings.Builder
		if err := run(context.Background(), []string{"check", "--config", cfg}, func(string) string { return "" }, &out, io.Discard); err != nil || strings.Contains(out.String(), "has no console.token") != note {
			t.Errorf("%q: %v %q", extra, err, out.String())
		}
	}
}
