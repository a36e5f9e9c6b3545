package gateway

import (
	"flag"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// seen is everything the gateways of this test run logged at any level
// (debug included) and every response body their clients read.
var seen struct {
	mu sync.Mutex
	b  strings.Builder
}

type seenWriter struct{}

func (seenWriter) Write(p []byte) (int, error) {
	seen.mu.Lock()
	defer seen.mu.Unlock()
	return seen.b.Write(p)
}

// seenCore logs every entry, as JSON, into seen.
func seenCore() zapcore.Core {
	enc := zap.NewProductionEncoderConfig()
	return zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(seenWriter{}), zapcore.DebugLevel)
}

// recording tees every response body into seen.
type recording struct{ rt http.RoundTripper }

func (r recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, seenWriter{}), resp.Body}
	}
	return resp, err
}

// Secrets the tests use: the upstream key, the client keys presented
// (all start with sk-), as bare values and as bearer credentials.
var secrets = []string{"upstream-secret", "sk-team-a", "sk-team-b", "sk-wrong", "sk-a\"", "sk-b\"", "sk-30", "sk-31", "sk-combo", "sk-fuzz-a", "sk-fuzz-b", "sk-ops-example", "Bearer sk-"}

// TestMain runs the package's tests, then greps everything the gateways
// logged and answered for a secret: none may appear.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		seen.mu.Lock()
		all := seen.b.String()
		seen.mu.Unlock()
		if len(all) < 10000 && flag.Lookup("test.run").Value.String() == "" {
			println("secrets check: too little was recorded to be meaningful:", len(all), "bytes")
			code = 1
		}
		for _, s := range secrets {
			if i := strings.Index(all, s); i >= 0 {
				println("secrets check: found", s, "in:", all[max(i-200, 0):min(i+100, len(all))])
				code = 1
			}
		}
		if code == 0 {
			if err := goleak.Find(); err != nil {
				println("goleak:", err.Error())
				code = 1
			}
		}
	}
	os.Exit(code)
}
