package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// counters returns every toolgate counter series, and every histogram's
// sample count, by "name{label=value,…}".
func counters(t *testing.T, e *gatewaytest.Env) map[string]float64 {
	t.Helper()
	mfs, err := e.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "toolgate_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var v float64
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				v = float64(m.GetHistogram().GetSampleCount())
			default:
				continue // gauges move while requests run: not from the record
			}
			out[series(mf.GetName(), m)] = v
		}
	}
	return out
}

func series(name string, m *dto.Metric) string {
	var labels []string
	for _, l := range m.GetLabel() {
		labels = append(labels, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func key(name string, labels ...string) string {
	var l []string
	for i := 0; i+1 < len(labels); i += 2 {
		l = append(l, labels[i]+"="+labels[i+1])
	}
	sort.Strings(l)
	return name + "{" + strings.Join(l, ",") + "}"
}

// expected is what an access line says the metrics moved by.
func expected(a map[string]any) map[string]float64 {
	want := map[string]float64{}
	str := func(k string) string { s, _ := a[k].(string); return s }
	route := str("route")
	if route == "" {
		route = "none"
	}
	keyName := str("key")
	if keyName == "" {
		keyName = "none"
	}
	up := str("upstream")
	want[key("toolgate_requests_total", "route", route, "code", fmt.Sprint(a["status"]))]++
	stream := a["stream"] == true
	want[key("toolgate_request_duration_seconds", "route", route, "stream", fmt.Sprint(stream))]++
	if up != "" && a["upstream_duration_ms"] != nil && fmt.Sprint(a["upstream_duration_ms"]) != "0s" {
		want[key("toolgate_upstream_duration_seconds", "upstream", up)]++
	}
	if stream && fmt.Sprint(a["ttfb_ms"]) != "0s" {
		want[key("toolgate_time_to_first_token_seconds", "route", route)]++
	}
	if up != "" && str("error_kind") != "" {
		want[key("toolgate_upstream_errors_total", "upstream", up, "kind", str("error_kind"))]++
	}
	if a["client_gone"] == true {
		want[key("toolgate_client_disconnects_total", "route", route)]++
	}
	counts := func(summary string, each func(name string, n int)) {
		for _, part := range strings.Split(summary, "; ") {
			name, n, ok := strings.Cut(part, "=")
			if ok && n != "0" {
				var v int
				fmt.Sscan(n, &v)
				each(name, v)
			}
		}
	}
	counts(str("repair"), func(name string, n int) {
		want[key("toolgate_repairs_total", "route", route, "action", name)] += float64(n)
	})
	metricName := map[string]string{"arguments_to_string": "arguments_to_string", "synthesized_ids": "synthesized_id", "deduped_call_ids": "deduped_call_id", "tool_call_content": "tool_call_content"}
	counts(str("normalize"), func(name string, n int) {
		want[key("toolgate_repairs_total", "route", route, "action", metricName[name])] += float64(n)
	})
	counts(str("fixes"), func(name string, n int) {
		want[key("toolgate_normalizations_total", "upstream", up, "kind", name)] += float64(n)
	})
	if outcomes := str("attempt_outcomes"); outcomes != "" {
		for _, o := range strings.Split(outcomes, ",") {
			want[key("toolgate_upstream_attempts_total", "route", route, "upstream", up, "outcome", o)]++
			if o == "ok" || o == "incomplete" || o == "violation" {
				want[key("toolgate_completions_total", "route", route, "outcome", o)]++
			}
		}
	}
	if l := str("limited"); l != "" {
		want[key("toolgate_budget_rejections_total", "route", route, "key", keyName, "reason", l)]++
	}
	for field, direction := range map[string]string{"tokens_in": "input", "tokens_out": "output"} {
		if n, ok := a[field].(int64); ok && n > 0 {
			want[key("toolgate_tokens_total", "key", keyName, "direction", direction)] += float64(n)
		}
	}
	if r := str("reasoning"); r != "" {
		want[key("toolgate_reasoning_requests_total", "route", route, "level", r)]++
	}
	if s := str("invalid_arguments"); s != "" {
		want[key("toolgate_invalid_arguments_total", "route", route)] += float64(len(strings.Split(s, "; ")))
	}
	return want
}

// Logs and metrics come from one record: request by request, over a mix
// (ok, repaired, normalized, violated, budget-refused, upstream error,
// client gone, invalid arguments), every counter moves by exactly what the
// request's access line says.
func TestMetricsFromRecord(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{SlowDelay: 50 * 1000 * 1000}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes:
  - {name: small, model: "small-*", upstream: sim, budget: {max_input_chars: 5}}
  - {name: all, model: "*", upstream: sim, reasoning: {format: reasoning-effort, client_effort: true}}
`)
	tool := `,"tools":[` + sim.WeatherTool + `]`
	for _, tc := range []struct {
		name, body string
		leave      bool   // the client leaves after the first bytes
		field      string // the access line field that shows the case, and its value
		value      any
	}{
		{"ok", `{"model":"sim-text","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, false, "tokens_out", int64(20)},
		{"ok whole", `{"model":"sim-tool","reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]` + tool + `}`, false, "reasoning", "low"},
		{"repaired and normalized", `{"model":"sim-text","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"get_weather","arguments":{"city":"x"}}},{"id":"b","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"user","content":"y"},{"role":"tool","tool_call_id":"a","content":"r"}]}`, false, "repair", "sealed=1; dropped=0; moved=1"},
		{"response normalized", `{"model":"sim-q-sameindex","stream":true,"messages":[{"role":"user","content":"hi"}]` + tool + `}`, false, "fixes", "index_reuse=1"},
		{"violated", `{"model":"sim-q-dupid","stream":true,"messages":[{"role":"user","content":"hi"}]` + tool + `}`, false, "outcome", "violation"},
		{"invalid arguments", `{"model":"sim-q-notype","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"integer"}}}}}]}`, false, "outcome", "ok"},
		{"budget refused", `{"model":"small-x","messages":[{"role":"user","content":"too long"}]}`, false, "limited", "maxInputChars"},
		{"upstream error", `{"model":"sim-error","stream":true,"messages":[{"role":"user","content":"hi"}]}`, false, "error_kind", "status"},
		{"no route", `not json`, false, "status", int64(400)},
		{"client gone", `{"model":"sim-slow","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true, "client_gone", true},
	} {
		before := counters(t, e)
		lines := len(e.Access())
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/chat/completions", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if tc.leave {
			resp.Body.Read(make([]byte, 1))
			cancel()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		a := e.WaitAccess(t, lines+1)[lines]
		if a[tc.field] != tc.value || tc.name == "invalid arguments" && a["invalid_arguments"] == nil {
			t.Errorf("%s: the access line does not show the case (%s = %v): %v", tc.name, tc.field, a[tc.field], a)
		}
		after := counters(t, e)
		got := map[string]float64{}
		for k, v := range after {
			if d := v - before[k]; d != 0 {
				got[k] = d
			}
		}
		if diff := cmp.Diff(expected(a), got); diff != "" {
			t.Errorf("%s: the metrics moved otherwise than the access line says (-line +metrics):\n%s\naccess line: %v", tc.name, diff, a)
		}
	}
}
