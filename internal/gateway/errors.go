package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/translate/anthropic"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// RouteError is a model name that no route serves.
type RouteError struct {
	Model string
}

func (e *RouteError) Error() string { return fmt.Sprintf("no route for model %q", wire.Clip(e.Model)) }

// fail answers a request that has not committed anything yet: 499 in the
// record when the client is gone (nothing is written), otherwise the mapped
// status and OpenAI error body.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, rec *observe.Record, err error) {
	rec.Error = err.Error()
	noteLimit(rec, err)
	if ue, ok := errors.AsType[*upstream.Error](err); ok && ue.Kind != upstream.KindCanceled {
		rec.ErrorKind, rec.Outcome = string(ue.Kind), observe.OutcomeUpstream
	}
	if _, ok := errors.AsType[*wire.IncompleteError](err); ok {
		rec.Outcome, rec.ErrorKind = observe.OutcomeIncomplete, "stream"
	}
	if _, ok := errors.AsType[*policy.ViolationError](err); ok {
		rec.Outcome, rec.ErrorKind = observe.OutcomeViolation, "protocol"
	}
	if _, ok := errors.AsType[*repair.RejectError](err); ok {
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "rejected", N: 1})
	}
	// A body read that failed cancels the request's context (net/http
	// does): an intake error is answered all the same.
	if _, intake := errors.AsType[*IntakeError](err); r.Context().Err() != nil && !intake {
		rec.Status, rec.Outcome, rec.ClientGone = 499, observe.OutcomeClientGone, true
		return
	}
	if pe, ok := errors.AsType[*PassthroughError](err); ok && len(pe.Methods) > 0 {
		w.Header().Set("Allow", strings.Join(pe.Methods, ", "))
	}
	status, body := errorFor(err)
	g.writeError(w, rec, status, body)
}

// noteLimit records which budget refused or cut a request, for the access
// log and toolgate_budget_rejections_total.
func noteLimit(rec *observe.Record, err error) {
	if le, ok := errors.AsType[*budget.LimitError](err); ok {
		rec.Limited = le.Limit.String()
	} else if _, ok := errors.AsType[*budget.StateError](err); ok {
		rec.Limited = budget.StateUnavailable.String()
	} else if errors.Is(err, budget.ErrCallTimeout) {
		rec.Limited = budget.CallTimeout.String()
	}
}

// errorFor is the only mapping from an error to the status and OpenAI
// error body the client sees (SPEC §7), used for JSON responses and for
// the error event of a started stream alike: each package's error type,
// by its kind. Messages say what was wrong and what to change; they carry
// no secret and no internal detail.
func errorFor(err error) (int, wire.ErrorBody) {
	switch e := firstKnown(err).(type) {
	case *IntakeError:
		return intakeError(e)
	case *wire.DecodeError:
		code := [...]string{wire.KindValue: "invalid_value", wire.KindSyntax: "invalid_json",
			wire.KindMissing: "missing_required_parameter", wire.KindDuplicate: "duplicate_key"}[e.Kind]
		return http.StatusBadRequest, wire.NewError("invalid_request_error", code, e.Param, e.Error())
	case *auth.Error:
		if e.Kind == auth.ModelNotAllowed {
			return http.StatusForbidden, wire.NewError("invalid_request_error", "model_not_allowed", "", e.Msg)
		}
		return http.StatusUnauthorized, wire.NewError("invalid_request_error", "invalid_api_key", "", e.Msg)
	case *budget.LimitError:
		return limitError(e)
	case *budget.StateError:
		return http.StatusServiceUnavailable, wire.NewError("server_error", "state_unavailable", "",
			"The gateway cannot reach its budget store, and refuses requests until it can (state.on_error: fail_closed); retry shortly.")
	case *repair.RejectError:
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "unpaired_tool_calls", "messages",
			"This route refuses transcripts whose tool calls and replies are not paired: "+e.Error())
	case *CoolingError:
		return http.StatusServiceUnavailable, wire.NewError("server_error", "deployments_cooling_down", "",
			fmt.Sprintf("Every deployment of route %s is cooling down after failing (429, 5xx or unreachable); retry after %d seconds.", e.Route, retrySeconds(e.RetryAfter)))
	case *RouteError:
		return http.StatusNotFound, wire.NewError("invalid_request_error", "model_not_found", "model",
			fmt.Sprintf("The model `%s` does not exist or is not served by this gateway; GET /v1/models lists the models it serves.", wire.Clip(e.Model)))
	case *upstream.Error:
		return upstreamError(e)
	case *policy.ViolationError:
		return http.StatusBadGateway, wire.NewError("upstream_error", "completion_policy_violation", "",
			fmt.Sprintf("The upstream %s answered, but its response does not satisfy the request: %s. Retry the request.", e.Upstream, e.Msg))
	case *policy.RequestError:
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "invalid_value", e.Param, e.Error())
	case *responses.RequestError:
		return translatorError(e.Unsupported, e.Param, e.Error())
	case *PassthroughError:
		return passthroughError(e)
	case *upstream.PathError:
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "invalid_path", "",
			fmt.Sprintf("The request path %s %s; send the path of the resource itself, written once, with no dot segment or encoded separator.", wire.Clip(e.Path), e.Reason))
	case *StoredResponseError:
		return storedResponseError(e)
	case *anthropic.RequestError:
		return translatorError(e.Unsupported, e.Param, e.Error())
	case *wire.IncompleteError:
		msg := fmt.Sprintf("The upstream %s broke off its response before it was complete; the answer is unusable, retry the request.", e.Upstream)
		if e.Message != "" {
			msg = fmt.Sprintf("The upstream %s reported an error: %s", e.Upstream, e.Message)
		}
		return http.StatusBadGateway, wire.NewError("upstream_error", "upstream_stream_incomplete", "", msg)
	}
	return http.StatusInternalServerError, wire.NewError("server_error", "internal_error", "",
		"The gateway failed to handle this request; the request id in X-Request-Id identifies it in the gateway's log.")
}

// firstKnown returns the first error in err's chain that errorFor maps.
func firstKnown(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e.(type) {
		case *IntakeError, *wire.DecodeError, *auth.Error, *budget.LimitError, *budget.StateError, *repair.RejectError,
			*RouteError, *CoolingError, *upstream.Error, *policy.ViolationError, *policy.RequestError, *anthropic.RequestError, *responses.RequestError, *StoredResponseError, *PassthroughError, *upstream.PathError, *wire.IncompleteError:
			return e
		}
	}
	return err
}

// translatorError is a client request an edge translator (Responses
// API in, Anthropic out) cannot express.
func translatorError(unsupported bool, param, msg string) (int, wire.ErrorBody) {
	code := "invalid_value"
	if unsupported {
		code = "unsupported_parameter"
	}
	return http.StatusBadRequest, wire.NewError("invalid_request_error", code, param, msg)
}

func passthroughError(e *PassthroughError) (int, wire.ErrorBody) {
	if len(e.Methods) > 0 {
		return http.StatusMethodNotAllowed, wire.NewError("invalid_request_error", "method_not_allowed", "",
			fmt.Sprintf("%s is not allowed on %s; use %s.", wire.Clip(e.Method), wire.Clip(e.Path), strings.Join(e.Methods, " or ")))
	}
	if e.Upstream != "" {
		return http.StatusNotFound, wire.NewError("invalid_request_error", "unknown_url", "",
			fmt.Sprintf("The route's upstream %s does not serve %s: only an upstream with protocol openai forwards the rest of /v1.", e.Upstream, wire.Clip(e.Path)))
	}
	return http.StatusNotFound, wire.NewError("invalid_request_error", "unknown_url", "",
		fmt.Sprintf("Unknown request URL: %s %s. No route forwards it: /v1/embeddings, /v1/completions and /v1/moderations go to the route of the body's model, other /v1 paths need routes[].passthrough (or, without a model, routes[].paths).", wire.Clip(e.Method), wire.Clip(e.Path)))
}

func storedResponseError(e *StoredResponseError) (int, wire.ErrorBody) {
	switch {
	case e.Disabled:
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "responses_not_stored", "previous_response_id",
			"This gateway keeps no responses, so previous_response_id cannot be followed: set responses.store to memory or redis in its config, or send the whole conversation as input.")
	case e.Previous:
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "previous_response_not_found", "previous_response_id",
			fmt.Sprintf("Previous response with id '%s' not found.", wire.Clip(e.ID)))
	}
	return http.StatusNotFound, wire.NewError("invalid_request_error", "response_not_found", "",
		fmt.Sprintf("Response with id '%s' not found.", wire.Clip(e.ID)))
}

func intakeError(e *IntakeError) (int, wire.ErrorBody) {
	status, code := http.StatusBadRequest, "invalid_request_body"
	switch e.Kind {
	case IntakeMediaType:
		status, code = http.StatusUnsupportedMediaType, "unsupported_media_type"
	case IntakeEncoding:
		status, code = http.StatusUnsupportedMediaType, "unsupported_content_encoding"
	case IntakeBadEncoding:
		code = "invalid_content_encoding"
	case IntakeTooLarge:
		status, code = http.StatusRequestEntityTooLarge, "request_too_large"
	case IntakeTimeout:
		status, code = http.StatusRequestTimeout, "request_timeout"
	case IntakePending:
		return http.StatusServiceUnavailable, wire.NewError("server_error", "too_many_pending_requests", "", e.Msg)
	}
	return status, wire.NewError("invalid_request_error", code, "", e.Msg)
}

func limitError(e *budget.LimitError) (int, wire.ErrorBody) {
	switch e.Limit {
	case budget.RequestsPerMinute, budget.TokensPerMinute:
		// OpenAI's shape: type "requests" or "tokens", code rate_limit_exceeded.
		unit, short := "requests", "RPM"
		if e.Limit == budget.TokensPerMinute {
			unit, short = "tokens", "TPM"
		}
		return http.StatusTooManyRequests, wire.NewError(unit, "rate_limit_exceeded", "",
			fmt.Sprintf("Rate limit reached for this key on %s per min (%s): Limit %d, Used %d. Please try again in %ds.", unit, short, e.Max, e.Got, retrySeconds(e.RetryAfter)))
	case budget.MaxCost:
		// OpenAI's shape for a spent quota.
		return http.StatusTooManyRequests, wire.NewError("insufficient_quota", "insufficient_quota", "",
			fmt.Sprintf("You exceeded your current quota: this key has spent $%s of its $%s (max_cost_usd); it resets in %ds.", dollars(int64(e.Got)), dollars(int64(e.Max)), retrySeconds(e.RetryAfter)))
	case budget.MaxCalls:
		return http.StatusTooManyRequests, wire.NewError("rate_limit_error", "max_calls_exceeded", "",
			fmt.Sprintf("This session has made its %d model calls for now (maxCalls); retry after %d seconds or start a new session.", e.Max, retrySeconds(e.RetryAfter)))
	}
	return http.StatusBadRequest, wire.NewError("invalid_request_error", "budget_exceeded", "messages",
		fmt.Sprintf("The transcript has %d characters and this route's budget allows %d (%s); send a shorter transcript.", e.Got, e.Max, e.Limit))
}

func upstreamError(e *upstream.Error) (int, wire.ErrorBody) {
	switch e.Kind {
	case upstream.KindTimeout:
		return http.StatusGatewayTimeout, wire.NewError("upstream_error", "upstream_timeout", "",
			fmt.Sprintf("The upstream %s did not answer in time; retry later or raise the route's timeout.", e.Upstream))
	case upstream.KindConnect, upstream.KindCanceled:
		return http.StatusBadGateway, wire.NewError("upstream_error", "upstream_unreachable", "",
			fmt.Sprintf("The gateway could not reach the upstream %s; retry later.", e.Upstream))
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	switch e.Status {
	case 400, 404, 409, 413, 422:
		// About the client's request: pass the upstream's own error on.
		if body, ok := upstreamBody(e.Body); ok {
			return e.Status, body
		}
		return e.Status, wire.NewError("invalid_request_error", "", "", msg)
	case 429:
		return http.StatusTooManyRequests, wire.NewError("rate_limit_error", "upstream_rate_limited", "",
			fmt.Sprintf("The upstream %s is rate limiting requests: %s", e.Upstream, msg))
	case 401, 403:
		return http.StatusBadGateway, wire.NewError("upstream_error", "upstream_auth_failed", "",
			fmt.Sprintf("The upstream %s refused the gateway's credentials (%d); the gateway's operator must fix its upstream key.", e.Upstream, e.Status))
	case 408, 504:
		return http.StatusGatewayTimeout, wire.NewError("upstream_error", "upstream_timeout", "",
			fmt.Sprintf("The upstream %s timed out (%d): %s", e.Upstream, e.Status, msg))
	case 503, 529: // 529: Anthropic's overloaded_error
		return http.StatusServiceUnavailable, wire.NewError("upstream_error", "upstream_unavailable", "",
			fmt.Sprintf("The upstream %s is unavailable (%d): %s", e.Upstream, e.Status, msg))
	}
	return http.StatusBadGateway, wire.NewError("upstream_error", "upstream_error", "",
		fmt.Sprintf("The upstream %s failed (%d): %s", e.Upstream, e.Status, msg))
}

// upstreamBody returns the upstream's error body when it is already in the
// OpenAI shape with a message.
func upstreamBody(b []byte) (wire.ErrorBody, bool) {
	var body wire.ErrorBody
	if json.Unmarshal(b, &body) != nil || body.Error.Message == "" {
		return wire.ErrorBody{}, false
	}
	if body.Error.Type == "" {
		body.Error.Type = "invalid_request_error"
	}
	return body, true
}

// retrySeconds rounds a wait up to whole seconds, as Retry-After says it.
func retrySeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}
