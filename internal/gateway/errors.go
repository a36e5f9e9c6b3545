package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// RouteError is a model name that no route serves.
type RouteError struct {
	Model string
}

func (e *RouteError) Error() string { return fmt.Sprintf("no route for model %q", wire.Clip(e.Model)) }

// IncompleteError is an upstream response that broke off or could not be
// used: a stream without its end marker, a cut or oversized body, an
// unparseable response, or an error object sent mid-stream.
type IncompleteError struct {
	Upstream string
	// Message is the upstream's own message when it sent an error object.
	Message string
	Err     error
}

func (e *IncompleteError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("upstream %s sent an error mid-response: %s", e.Upstream, e.Message)
	}
	return fmt.Sprintf("upstream %s: response incomplete: %v", e.Upstream, e.Err)
}

func (e *IncompleteError) Unwrap() error { return e.Err }

// ViolationError is a response that does not satisfy its request under the
// route's completion policy (SPEC §3), including malformed tool calls.
type ViolationError struct {
	Upstream string
	Msg      string
}

func (e *ViolationError) Error() string {
	return fmt.Sprintf("upstream %s: the response does not satisfy the request: %s", e.Upstream, e.Msg)
}

// errorFor is the only mapping from an error to the status and OpenAI error
// body the client sees (SPEC §7), used for JSON responses and for the error
// event of a started stream alike. Messages say what was wrong and what to
// change; they carry no secret and no internal detail.
func errorFor(err error) (int, wire.ErrorBody) {
	if ie, ok := errors.AsType[*IntakeError](err); ok {
		status, code := http.StatusBadRequest, "invalid_request_body"
		switch ie.Kind {
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
			return http.StatusServiceUnavailable, wire.NewError("server_error", "too_many_pending_requests", "", ie.Msg)
		}
		return status, wire.NewError("invalid_request_error", code, "", ie.Msg)
	}
	if de, ok := errors.AsType[*wire.DecodeError](err); ok {
		code := "invalid_value"
		switch de.Kind {
		case wire.KindSyntax:
			code = "invalid_json"
		case wire.KindMissing:
			code = "missing_required_parameter"
		case wire.KindDuplicate:
			code = "duplicate_key"
		}
		return http.StatusBadRequest, wire.NewError("invalid_request_error", code, de.Param, de.Error())
	}
	if ae, ok := errors.AsType[*AuthError](err); ok {
		code := "invalid_api_key"
		if ae.Status == http.StatusForbidden {
			code = "model_not_allowed"
		}
		return ae.Status, wire.NewError("invalid_request_error", code, "", ae.Msg)
	}
	if le, ok := errors.AsType[*budget.LimitError](err); ok && (le.Limit == limitRequests || le.Limit == limitTokens) {
		// OpenAI's shape: type "requests" or "tokens", code rate_limit_exceeded.
		unit, short := "requests", "RPM"
		if le.Limit == limitTokens {
			unit, short = "tokens", "TPM"
		}
		return http.StatusTooManyRequests, wire.NewError(unit, "rate_limit_exceeded", "",
			fmt.Sprintf("Rate limit reached for this key on %s per min (%s): Limit %d, Used %d. Please try again in %ds.", unit, short, le.Max, le.Got, retrySeconds(le.RetryAfter)))
	}
	if _, ok := errors.AsType[*StateError](err); ok {
		return http.StatusServiceUnavailable, wire.NewError("server_error", "state_unavailable", "",
			"The gateway cannot reach its budget store, and refuses requests until it can (state.on_error: fail_closed); retry shortly.")
	}
	if le, ok := errors.AsType[*budget.LimitError](err); ok && le.Limit == "maxCalls" {
		return http.StatusTooManyRequests, wire.NewError("rate_limit_error", "max_calls_exceeded", "",
			fmt.Sprintf("This session has made its %d model calls for now (maxCalls); retry after %d seconds or start a new session.", le.Max, retrySeconds(le.RetryAfter)))
	}
	if le, ok := errors.AsType[*budget.LimitError](err); ok {
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "budget_exceeded", "messages",
			fmt.Sprintf("The transcript has %d characters and this route's budget allows %d (%s); send a shorter transcript.", le.Got, le.Max, le.Limit))
	}
	if re, ok := errors.AsType[*repair.RejectError](err); ok {
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "unpaired_tool_calls", "messages",
			"This route refuses transcripts whose tool calls and replies are not paired: "+re.Error())
	}
	if re, ok := errors.AsType[*RouteError](err); ok {
		return http.StatusNotFound, wire.NewError("invalid_request_error", "model_not_found", "model",
			fmt.Sprintf("The model `%s` does not exist or is not served by this gateway; GET /v1/models lists the models it serves.", wire.Clip(re.Model)))
	}
	if ue, ok := errors.AsType[*upstream.Error](err); ok {
		return upstreamError(ue)
	}
	if ve, ok := errors.AsType[*ViolationError](err); ok {
		return http.StatusBadGateway, wire.NewError("upstream_error", "completion_policy_violation", "",
			fmt.Sprintf("The upstream %s answered, but its response does not satisfy the request: %s. Retry the request.", ve.Upstream, ve.Msg))
	}
	if pe, ok := errors.AsType[*policy.RequestError](err); ok {
		return http.StatusBadRequest, wire.NewError("invalid_request_error", "invalid_value", pe.Param, pe.Error())
	}
	if ie, ok := errors.AsType[*IncompleteError](err); ok {
		msg := fmt.Sprintf("The upstream %s broke off its response before it was complete; the answer is unusable, retry the request.", ie.Upstream)
		if ie.Message != "" {
			msg = fmt.Sprintf("The upstream %s reported an error: %s", ie.Upstream, ie.Message)
		}
		return http.StatusBadGateway, wire.NewError("upstream_error", "upstream_stream_incomplete", "", msg)
	}
	return http.StatusInternalServerError, wire.NewError("server_error", "internal_error", "",
		"The gateway failed to handle this request; the request id in X-Request-Id identifies it in the gateway's log.")
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
	case 503:
		return http.StatusServiceUnavailable, wire.NewError("upstream_error", "upstream_unavailable", "",
			fmt.Sprintf("The upstream %s is unavailable (503): %s", e.Upstream, msg))
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
