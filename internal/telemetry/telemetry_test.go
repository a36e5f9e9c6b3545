package telemetry

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Off unless an endpoint is configured or in the environment; the
// standard switches turn it off; HTTP endpoints get /v1/traces.
func TestNew(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		cfg     Options
		env     map[string]string
		enabled bool
	}{
		{"default", Options{}, nil, false},
		{"configured", Options{Endpoint: "http://127.0.0.1:4317"}, nil, true},
		{"environment", Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true},
		{"disabled", Options{Endpoint: "http://127.0.0.1:4317"}, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"no exporter", Options{Endpoint: "http://127.0.0.1:4317"}, map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		p, err := New(ctx, tc.cfg, func(k string) string { return tc.env[k] })
		if err != nil || p.Enabled != tc.enabled {
			t.Errorf("%s: enabled %v, %v", tc.name, p != nil && p.Enabled, err)
			continue
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("%s: shutdown: %v", tc.name, err)
		}
	}
	if _, err := New(ctx, Options{Endpoint: "http://x:1"}, func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}[k]
	}); err == nil {
		t.Error("an unknown protocol is accepted")
	}
	for in, want := range map[string]string{"http://c:4318": "http://c:4318/v1/traces", "http://c:4318/": "http://c:4318/v1/traces", "http://c:4318/custom/traces": "http://c:4318/custom/traces"} {
		if got := tracesURL(in); got != want {
			t.Errorf("tracesURL(%q) = %q", in, got)
		}
	}
}
