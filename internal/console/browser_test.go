package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// clientKey is the key the test's client presents: it must appear
// nowhere in the console, nor its hash.
const clientKey = "sk-console-test-secret"

// consoleEnv is a gateway in front of the simulator, with a route of two
// deployments whose first cannot be reached, and its console on an
// admin listener.
func consoleEnv(t *testing.T) (e *gatewaytest.Env, admin string) {
	up := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(up.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // a deployment nothing answers at
	con := console.New(console.Options{Recent: 50, Version: "test"})
	e = gatewaytest.Start(t, up.URL, `
upstreams:
  - {name: sim, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}"}
  - {name: unreachable, url: "`+dead.URL+`/v1", api_key: "${UPSTREAM_KEY}"}
keys:
  - {name: team-a, sha256: `+gatewaytest.KeyHash(clientKey)+`, rate_limit: {requests_per_minute: 100}}
routes:
  - {name: pool, model: "pool-*", upstreams: [{name: unreachable, weight: 100}, {name: sim, weight: 1}], cooldown: 1m}
  - {name: default, model: "*", upstream: sim}
`, gatewaytest.Options{Gateway: func(o *gateway.Options) { o.Console = con }})
	srv := httptest.NewServer(gateway.NewAdmin(e.Reg, func() bool { return true }, false,
		con.Handler(func() console.Source { return e.Gateway }, e.Reg)))
	t.Cleanup(srv.Close)
	t.Cleanup(con.Close) // first: it ends the live feed's sessions, which the server's Close waits for
	return e, srv.URL
}

// browser is a headless chromium the test drives, and what its page
// logged: console errors, exceptions, CSP violations.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

func startBrowser(t *testing.T) *browser {
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("TOOLGATE_REQUIRE_BROWSER") != "" || os.Getenv("CI") != "" {
			t.Fatal("chromium is required under CI (CI or TOOLGATE_REQUIRE_BROWSER) and is not installed: apt-get install chromium")
		}
		t.Skip("chromium is not installed")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1700), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	if err := chromedp.Listen(ctx, b.listen); err != nil { // starts the browser
		t.Fatal(err)
	}
	return b
}

// listen keeps what the page logs that a sound page does not.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			b.problems = append(b.problems, "console "+string(ev.Type))
		}
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Source == log.EntrySourceSecurity {
			b.problems = append(b.problems, "log: "+ev.Entry.Text)
		}
	}
}

// do runs steps, within a bound.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action for its value, within a bound.
func value[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// The console in a real browser: the page goes live, and the requests a
// client sends appear without a reload — a broken transcript, whose
// inspector shows the sealed call and the dropped orphan by id; a quirky
// stream (parallel calls at one index), whose quirk is shown by its id,
// with the chunk it was first normalized at and a link that opens its
// row of the catalogue; a deployment that
// cannot be reached, shown cooling down. Nothing is logged to the page's
// console (no error, no CSP violation), and neither the client's key,
// nor its hash, nor the upstream's key appears in the page or in the
// API's answers.
func TestConsoleInBrowser(t *testing.T) {
	b := startBrowser(t)
	e, admin := consoleEnv(t)
	b.do(t, "open the console", chromedp.Navigate(admin+"/ui/"), chromedp.WaitVisible("#overview-list dt"),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`))

	req := func(model, messages string, stream bool) string {
		return `{"model":"` + model + `","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"tools":[` + sim.WeatherTool + `],"messages":` + messages + `}`
	}
	authed := func(body string) {
		r, _ := http.NewRequest("POST", e.URL+"/chat/completions", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+clientKey)
		r.Header.Set("Content-Type", "application/json")
		resp, err := e.HTTP.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	authed(req("sim-strict", `[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"call_unanswered","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"user","content":"and?"},{"role":"tool","tool_call_id":"call_orphan","content":"late"}]`, false))
	authed(req("sim-q-sameindex", `[{"role":"user","content":"weather?"}]`, true))
	authed(req("pool-text", `[{"role":"user","content":"hi"}]`, false))

	b.do(t, "the requests appear live", chromedp.Poll[chromedp.Void](`document.querySelectorAll("#requests-body tr[data-id]").length >= 3`))
	clickRow := `Array.from(document.querySelectorAll("#requests-body tr")).find(tr => tr.cells[2].textContent === %q).click()`
	b.do(t, "the broken transcript's inspector", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(clickRow, "sim-strict")),
		chromedp.WaitVisible(`#inspector li.action-sealed[data-call-id="call_unanswered"]`),
		chromedp.WaitVisible(`#inspector li.action-dropped[data-call-id="call_orphan"]`))
	if outline := value(t, b, "the outline", chromedp.Text("#inspector .outline")); !strings.Contains(outline, "call_unanswered") || !strings.Contains(outline, "call_orphan") {
		t.Errorf("the outline before and after: %q", outline)
	}
	fix := `#inspector .fix[data-kind="index_reuse"] a.quirk`
	b.do(t, "the quirky stream's inspector", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(clickRow, "sim-q-sameindex")), chromedp.WaitVisible(fix))
	if quirk := value(t, b, "the quirk", chromedp.Text(fix)); quirk != "A02" {
		t.Errorf("the quirk shown: %q", quirk)
	}
	if tag := value(t, b, "the normalization", chromedp.Text(`#inspector .fix[data-kind="index_reuse"]`)); !strings.Contains(tag, "first at chunk ") {
		t.Errorf("the normalization does not say at which chunk: %q", tag)
	}
	href := value(t, b, "the quirk's link", chromedp.AttributeValue(fix, "href")).Value
	b.do(t, "the cooling deployment", chromedp.WaitVisible(`#upstreams-body tr[data-upstream="unreachable"] .cooling`))
	page := value(t, b, "the page", chromedp.OuterHTML("html"))
	if os.Getenv("TOOLGATE_SCREENSHOT") != "" { // docs/operations.md's picture: the repaired transcript's inspector
		b.do(t, "the inspector again", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(clickRow, "sim-strict")), chromedp.WaitVisible(`#inspector li.action-sealed`))
		png := value(t, b, "the screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		b.do(t, "back to the quirk", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(clickRow, "sim-q-sameindex")), chromedp.WaitVisible(fix))
	}
	b.do(t, "the quirk's link", chromedp.Click(fix), chromedp.WaitVisible(`tr#a02`))
	target := value(t, b, "the row", chromedp.Evaluate[string](`document.querySelector(":target") ? document.querySelector(":target").id : ""`))
	if target != "a02" || !strings.HasSuffix(href, "quirks#a02") {
		t.Errorf("the link %q opened the row %q", href, target)
	}

	answers := page
	for _, path := range []string{"/ui/api/overview", "/ui/api/status", "/ui/api/fixed", "/ui/api/requests"} {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers += string(body)
	}
	for _, secret := range []string{clientKey, gatewaytest.KeyHash(clientKey), gatewaytest.UpstreamKey} {
		if strings.Contains(answers, secret) {
			t.Errorf("a secret reached the console: %q", secret)
		}
	}
	if !strings.Contains(answers, "team-a") {
		t.Error("the key's name is not shown")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		t.Errorf("the page logged: %q", b.problems)
	}
}
