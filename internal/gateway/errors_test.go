package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// The one failure table (docs/spec.md §7): every error type the request path
// raises, one row each, with what the client is answered, how the record
// names it, and what the path may do next (retry on the same upstream,
// move to another deployment or route, cool the deployment down). The
// same error wrapped classifies the same; an unknown error is a 500.
func TestClassify(t *testing.T) {
	upErr := func(kind upstream.Kind, status int) error {
		return &upstream.Error{Upstream: "u", Kind: kind, Status: status, RetryAfter: 3 * time.Second}
	}
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		code    string
		outcome string
		attempt observe.AttemptOutcome
		retry   bool
		fall    bool
		cool    string
		limited string
	}{
		{"intake: too large", &IntakeError{Kind: IntakeTooLarge, Msg: "m"}, 413, "request_too_large", "", "", false, false, "", ""},
		{"intake: pending", &IntakeError{Kind: IntakePending, Msg: "m"}, 503, "too_many_pending_requests", "", "", false, false, "", ""},
		{"decode: syntax", &wire.DecodeError{Kind: wire.KindSyntax, Msg: "m"}, 400, "invalid_json", "", "", false, false, "", ""},
		{"decode: duplicate", &wire.DecodeError{Kind: wire.KindDuplicate, Param: "model", Msg: "m"}, 400, "duplicate_key", "", "", false, false, "", ""},
		{"param", &wire.ParamError{Param: "tool_choice", Msg: "m"}, 400, "invalid_value", "", "", false, false, "", ""},
		{"param: unsupported", &wire.ParamError{Param: "n", Msg: "m", Unsupported: true}, 400, "unsupported_parameter", "", "", false, false, "", ""},
		{"auth: no key", &auth.Error{Kind: auth.Missing, Msg: "m"}, 401, "invalid_api_key", "", "", false, false, "", ""},
		{"auth: model", &auth.Error{Kind: auth.ModelNotAllowed, Msg: "m"}, 403, "model_not_allowed", "", "", false, false, "", ""},
		{"budget: calls", &budget.LimitError{Limit: budget.MaxCalls, Max: 2, Got: 3}, 429, "max_calls_exceeded", "", "", false, false, "", "maxCalls"},
		{"budget: input", &budget.LimitError{Limit: budget.MaxInputChars, Max: 2, Got: 3}, 400, "budget_exceeded", "", "", false, false, "", "maxInputChars"},
		{"budget: spend", &budget.LimitError{Limit: budget.MaxCost, Max: 2, Got: 3}, 429, "insufficient_quota", "", "", false, false, "", "max_cost_usd"},
		{"state", &budget.StateError{Err: errors.New("down")}, 503, "state_unavailable", "", "", false, false, "", "state_unavailable"},
		{"repair: reject", &repair.RejectError{}, 400, "unpaired_tool_calls", "", "", false, false, "", ""},
		{"route", &RouteError{Model: "m"}, 404, "model_not_found", "", "", false, false, "", ""},
		{"passthrough: unknown", &PassthroughError{Method: "GET", Path: "/v1/x"}, 404, "unknown_url", "", "", false, false, "", ""},
		{"passthrough: method", &PassthroughError{Method: "PUT", Path: "/v1/x", Methods: []string{"GET"}}, 405, "method_not_allowed", "", "", false, false, "", ""},
		{"path", &upstream.PathError{Path: "/v1/..", Reason: "r"}, 400, "invalid_path", "", "", false, false, "", ""},
		{"stored response", &StoredResponseError{ID: "x"}, 404, "response_not_found", "", "", false, false, "", ""},
		{"cooling", &CoolingError{Route: "r", RetryAfter: time.Second}, 503, "deployments_cooling_down", "", "", false, true, "", ""},
		{"upstream: connect", upErr(upstream.KindConnect, 0), 502, "upstream_unreachable", observe.OutcomeUpstream, "connect", true, true, "unreachable", ""},
		{"upstream: timeout", upErr(upstream.KindTimeout, 0), 504, "upstream_timeout", observe.OutcomeUpstream, "timeout", false, true, "", ""},
		{"upstream: call timeout", &upstream.Error{Upstream: "u", Kind: upstream.KindTimeout, Err: budget.ErrCallTimeout}, 504, "upstream_timeout", observe.OutcomeUpstream, "timeout", false, false, "", "callTimeoutMs"},
		{"upstream: canceled", upErr(upstream.KindCanceled, 0), 502, "upstream_unreachable", "", "canceled", false, false, "", ""},
		{"upstream: 429", upErr(upstream.KindStatus, 429), 429, "upstream_rate_limited", observe.OutcomeUpstream, "status_429", true, true, "rate_limited", ""},
		{"upstream: 500", upErr(upstream.KindStatus, 500), 502, "upstream_error", observe.OutcomeUpstream, "status_5xx", true, true, "status_5xx", ""},
		{"upstream: 529", upErr(upstream.KindStatus, 529), 503, "upstream_unavailable", observe.OutcomeUpstream, "status_5xx", true, true, "status_5xx", ""},
		{"upstream: 401", upErr(upstream.KindStatus, 401), 502, "upstream_auth_failed", observe.OutcomeUpstream, "status_4xx", false, true, "", ""},
		{"upstream: 400", upErr(upstream.KindStatus, 400), 400, "", observe.OutcomeUpstream, "status_4xx", false, false, "", ""},
		{"violation", &policy.ViolationError{Upstream: "u", Msg: "m"}, 502, "completion_policy_violation", observe.OutcomeViolation, "violation", true, true, "", ""},
		{"incomplete", &wire.IncompleteError{Upstream: "u", Err: errors.New("cut")}, 502, "upstream_stream_incomplete", observe.OutcomeIncomplete, "incomplete", true, true, "", ""},
		{"refused by a later route", &RefusedError{Route: "r", Upstream: "u", Err: &wire.ParamError{Param: "tools.0.type", Msg: "m", Unsupported: true}}, 400, "unsupported_parameter", "", "", false, true, "", ""},
		{"passed over", &PassedOverError{Err: upErr(upstream.KindStatus, 529), Refused: []*RefusedError{{Route: "r", Upstream: "u", Err: &wire.ParamError{Param: "tools.0.type", Msg: "m"}}}},
			503, "upstream_unavailable", observe.OutcomeUpstream, "status_5xx", true, true, "status_5xx", ""},
		{"unknown", errors.New("boom"), 500, "internal_error", "", "incomplete", false, false, "", ""},
	} {
		for _, err := range []error{tc.err, fmt.Errorf("wrapped: %w", tc.err)} {
			f := classify(err)
			code := ""
			if f.body.Error.Code != nil {
				code = *f.body.Error.Code
			}
			if f.status != tc.status || code != tc.code || f.outcome != tc.outcome || f.attempt != tc.attempt ||
				f.retry != tc.retry || f.fallback != tc.fall || f.cool != tc.cool || f.limited != tc.limited {
				t.Errorf("%s (%v): got %d %q outcome %q attempt %q retry %v fallback %v cool %q limited %q", tc.name, err,
					f.status, code, f.outcome, f.attempt, f.retry, f.fallback, f.cool, f.limited)
			}
			if f.body.Error.Message == "" || f.body.Error.Type == "" || f.status < http.StatusBadRequest {
				t.Errorf("%s: an answer without a message, a type or an error status: %+v", tc.name, f)
			}
		}
	}
	if f := classify(upErr(upstream.KindStatus, 429)); f.retryAfter != 3*time.Second {
		t.Errorf("a 429's Retry-After: %v", f.retryAfter)
	}
	if f := classify(&PassthroughError{Methods: []string{"GET", "POST"}}); len(f.allow) != 2 {
		t.Errorf("a 405's Allow: %v", f.allow)
	}
}
