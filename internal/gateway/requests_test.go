package gateway_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

var update = flag.Bool("update", false, "rewrite the golden files' upstream and response sections from what the gateway does")

// requestGolden is one testdata/requests file: the gateway's config (a
// default one routing every model to "up" when the section is absent),
// the client's request, what the upstream received ("(nothing)" when the
// gateway answered itself) and the status the client got, with the error
// body when it is an error.
type requestGolden struct {
	comment  string
	config   string
	request  string
	upstream string
	response string
}

const defaultRequestConfig = `upstreams: [{name: up, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: up}]
`

func readRequestGolden(t *testing.T, path string) requestGolden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := requestGolden{config: defaultRequestConfig}
	sections := map[string]*string{"config": &g.config, "request": &g.request, "upstream": &g.upstream, "response": &g.response}
	var section *string
	var comment strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			if section = sections[strings.TrimSuffix(name, " --")]; section == nil {
				t.Fatalf("%s: unknown section %q", path, line)
			}
			*section = ""
			continue
		}
		if section == nil {
			comment.WriteString(line)
		} else {
			*section += line
		}
	}
	g.comment = comment.String()
	return g
}

func (g requestGolden) String() string {
	var b strings.Builder
	b.WriteString(g.comment)
	if g.config != defaultRequestConfig {
		b.WriteString("-- config --\n" + g.config)
	}
	b.WriteString("-- request --\n" + g.request + "-- upstream --\n" + g.upstream + "-- response --\n" + g.response)
	return b.String()
}

// indent shows a JSON body with one member per line, keeping its members'
// order (what the upstream received, byte order included, is the point).
func indent(t *testing.T, body []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, body, "", "  "); err != nil {
		return string(body) + "\n"
	}
	return b.String() + "\n"
}

// TestRequestGolden runs each testdata/requests fixture: the request in
// and what the upstream received out, so that each rewrite the gateway
// makes on the way (model, repair, normalization, trimming, limits,
// reasoning fields, stream options) can be read in one file. go test -run
// TestRequestGolden -update rewrites the expected sections.
func TestRequestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/requests/*.txt")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			g := readRequestGolden(t, path)
			var mu sync.Mutex
			var received []byte
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				received = b
				mu.Unlock()
				if bytes.Contains(b, []byte(`"stream":true`)) {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
			}))
			defer up.Close()
			e := gatewaytest.Start(t, up.URL, g.config)
			resp := e.Post(t, g.request)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := g
			got.upstream = "(nothing)\n"
			if received != nil {
				got.upstream = indent(t, received)
			}
			got.response = fmt.Sprintf("%d\n", resp.StatusCode)
			if resp.StatusCode != http.StatusOK {
				got.response += indent(t, body)
			}
			if *update {
				if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(g.String(), got.String()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}
