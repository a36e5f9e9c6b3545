package gateway

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// RouteError is a model name that no route serves.
type RouteError struct {
	Model string
}

func (e *RouteError) Error() string { return fmt.Sprintf("no route for model %q", wire.Clip(e.Model)) }

// failure is everything the request path needs to know about an error,
// from one walk of its chain (classify): what the client is answered, how
// the record names it, and what the path may do next.
type failure struct {
	status int
	body   wire.ErrorBody
	// outcome and kind name it in the record (outcome "" for a request
	// refused: rejected); attempt names an upstream attempt that ended
	// with it (toolgate_upstream_attempts_total{outcome}).
	outcome, kind string
	attempt       observe.AttemptOutcome
	// limited names the budget or limit that refused or cut the request.
	limited string
	// retry: another attempt on the same upstream may succeed (no
	// connection, a 429 or 5xx, a response broken or refused by the
	// policy). fallback: another deployment or route may (those, and a
	// timeout or the upstream refusing the gateway's key).
	retry, fallback bool
	// cool is why a deployment that failed so cools down ("" for none).
	cool string
	// retryAfter is how long the upstream asked to be left alone (its
	// Retry-After), or the route's wait: the backoff and the cooldown
	// take it, and a 429 or 503 answer carries it (0: none).
	retryAfter time.Duration
	// allow lists the methods a 405 names.
	allow []string
}

// classify is the one table from an error to what it means: the first
// error of its chain of a known type decides (a wrapper never hides what
// it wraps); anything else is the gateway's own failure, a 500.
func classify(err error) failure {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if f, ok := known(e, err); ok {
			return f
		}
	}
	_, body := internalError()
	return failure{status: http.StatusInternalServerError, body: body, attempt: observe.AttemptIncomplete}
}

// known classifies one error of err's chain, if its type is one the
// table knows.
func known(e, err error) (failure, bool) {
	switch e := e.(type) {
	case *IntakeError:
		return client(intakeError(e)), true
	case *wire.DecodeError:
		code := [...]string{wire.KindValue: "invalid_value", wire.KindSyntax: "invalid_json",
			wire.KindMissing: "missing_required_parameter", wire.KindDuplicate: "duplicate_key"}[e.Kind]
		return client(http.StatusBadRequest, wire.NewError("invalid_request_error", code, e.Param, e.Error())), true
	case *wire.ParamError:
		code := "invalid_value"
		if e.Unsupported {
			code = "unsupported_parameter"
		}
		return client(http.StatusBadRequest, wire.NewError("invalid_request_error", code, e.Param, e.Error())), true
	case *auth.Error:
		if e.Kind == auth.ModelNotAllowed {
			return client(http.StatusForbidden, wire.NewError("invalid_request_error", "model_not_allowed", "", e.Msg)), true
		}
		return client(http.StatusUnauthorized, wire.NewError("invalid_request_error", "invalid_api_key", "", e.Msg)), true
	case *budget.LimitError:
		f := client(limitError(e))
		f.limited = e.Limit.String()
		return f, true
	case *budget.StateError:
		f := client(http.StatusServiceUnavailable, wire.NewError("server_error", "state_unavailable", "",
			"The gateway cannot reach its budget store, and refuses requests until it can (state.on_error: fail_closed); retry shortly."))
		f.limited = budget.StateUnavailable.String()
		return f, true
	case *repair.RejectError:
		return client(http.StatusBadRequest, wire.NewError("invalid_request_error", "unpaired_tool_calls", "messages",
			"This route refuses transcripts whose tool calls and replies are not paired: "+e.Error())), true
	case *RouteError:
		return client(http.StatusNotFound, wire.NewError("invalid_request_error", "model_not_found", "model",
			fmt.Sprintf("The model `%s` does not exist or is not served by this gateway; GET /v1/models lists the models it serves.", wire.Clip(e.Model)))), true
	case *PassthroughError:
		f := client(passthroughError(e))
		f.allow = e.Methods
		return f, true
	case *upstream.PathError:
		return client(http.StatusBadRequest, wire.NewError("invalid_request_error", "invalid_path", "",
			fmt.Sprintf("The request path %s %s; send the path of the resource itself, written once, with no dot segment or encoded separator.", wire.Clip(e.Path), e.Reason))), true
	case *upstream.ModelError:
		return client(http.StatusBadRequest, wire.NewError("invalid_request_error", "invalid_value", "model",
			modelMessage(e))), true
	case *StoredResponseError:
		return client(storedResponseError(e)), true
	case *CoolingError:
		f := client(http.StatusServiceUnavailable, wire.NewError("server_error", "deployments_cooling_down", "",
			fmt.Sprintf("Every deployment of route %s is cooling down after failing (429, 5xx or unreachable); retry after %d seconds.", e.Route, retrySeconds(e.RetryAfter))))
		f.fallback, f.retryAfter = true, e.RetryAfter
		return f, true
	case *upstream.Error:
		return upstreamFailure(e, err), true
	case *RefusedError, *PassedOverError:
		return passedOverFailure(e), true
	case *policy.ViolationError:
		status, body := http.StatusBadGateway, wire.NewError("upstream_error", "completion_policy_violation", "",
			fmt.Sprintf("The upstream %s answered, but its response does not satisfy the request: %s. Retry the request.", e.Upstream, e.Msg))
		return failure{status: status, body: body, outcome: observe.OutcomeViolation, kind: "protocol", attempt: observe.AttemptViolation, retry: true, fallback: true}, true
	case *wire.IncompleteError:
		msg := fmt.Sprintf("The upstream %s broke off its response before it was complete; the answer is unusable, retry the request.", e.Upstream)
		if e.Message != "" {
			msg = fmt.Sprintf("The upstream %s reported an error: %s", e.Upstream, e.Message)
		}
		body := wire.NewError("upstream_error", "upstream_stream_incomplete", "", msg)
		body.Error.UpstreamType = e.Type
		return failure{status: http.StatusBadGateway, body: body,
			outcome: observe.OutcomeIncomplete, kind: "stream", attempt: observe.AttemptIncomplete, retry: true, fallback: true}, true
	}
	return failure{}, false
}

// passedOverFailure classifies a route that could not take the request
// (another deployment or route may: a refusal falls back), and an
// upstream's failure after which routes were passed over (the failure,
// saying which member stopped each).
func passedOverFailure(err error) failure {
	if e, ok := err.(*RefusedError); ok {
		f := classify(e.Err)
		f.body.Error.Message = "The request cannot go to " + e.reason()
		f.fallback = true
		return f
	}
	e := err.(*PassedOverError)
	f := classify(e.Err)
	f.body.Error.Message += " " + e.note()
	return f
}

// client is a failure of the request itself: answered at once, tried
// nowhere else.
func client(status int, body wire.ErrorBody) failure { return failure{status: status, body: body} }

// upstreamFailure classifies a failed upstream call (err is the whole
// chain: a call whose own deadline, budget.ErrCallTimeout, passed is
// tried nowhere else).
func upstreamFailure(e *upstream.Error, err error) failure {
	status, body := upstreamError(e)
	f := failure{status: status, body: body, outcome: observe.OutcomeUpstream, kind: string(e.Kind), attempt: attemptOf[e.Kind], retryAfter: e.RetryAfter}
	switch e.Kind {
	case upstream.KindCanceled:
		f.outcome, f.kind = "", ""
	case upstream.KindConnect:
		f.retry, f.fallback, f.cool = true, true, "unreachable"
	case upstream.KindTimeout:
		f.fallback = !errors.Is(err, budget.ErrCallTimeout)
		if errors.Is(err, budget.ErrCallTimeout) {
			f.limited = budget.CallTimeout.String()
		}
	case upstream.KindStatus:
		switch {
		case e.Status == http.StatusTooManyRequests:
			f.attempt, f.retry, f.fallback, f.cool = observe.AttemptStatus429, true, true, "rate_limited"
		case e.Status >= 500:
			f.attempt, f.retry, f.fallback, f.cool = observe.AttemptStatus5xx, true, true, "status_5xx"
		default:
			f.attempt = observe.AttemptStatus4xx
			f.fallback = e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
		}
	}
	return f
}

// attemptOf names an attempt that ended in an upstream failure of each
// kind (a status is named by its class in upstreamFailure).
var attemptOf = map[upstream.Kind]observe.AttemptOutcome{upstream.KindConnect: observe.AttemptConnect,
	upstream.KindTimeout: observe.AttemptTimeout, upstream.KindCanceled: observe.AttemptCanceled}

// fail answers a request that has not committed anything yet: 499 in the
// record when the client is gone (nothing is written), otherwise the
// classified status and error body, in the client API's shape.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, rec *observe.Record, api clientAPI, err error) {
	f := classify(err)
	rec.Limited = cmp.Or(f.limited, rec.Limited)
	if _, ok := errors.AsType[*repair.RejectError](err); ok {
		rec.Repairs = append(rec.Repairs, observe.Count{Name: "rejected", N: 1})
	}
	// A body read that failed cancels the request's context (net/http
	// does), and so does the read deadline of a refusal that leaves the
	// body unread (leaveBody): both are answered all the same. Only a
	// client that went away is not.
	if _, intake := errors.AsType[*IntakeError](err); r.Context().Err() != nil && !intake && !leftBody(w) {
		end(rec, ending{status: 499, outcome: observe.OutcomeClientGone, clientGone: true, err: err})
		return
	}
	if len(f.allow) > 0 {
		w.Header().Set("Allow", strings.Join(f.allow, ", "))
	}
	if f.retryAfter > 0 && (f.status == http.StatusTooManyRequests || f.status == http.StatusServiceUnavailable) {
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(f.retryAfter)))
	}
	status := api.writeError(w, f.status, f.body)
	end(rec, ending{status: status, outcome: f.outcome, kind: f.kind, err: err})
}

// internalError is the answer to a failure of the gateway's own.
func internalError() (int, wire.ErrorBody) {
	return http.StatusInternalServerError, wire.NewError("server_error", "internal_error", "",
		"The gateway failed to handle this request; the request id in X-Request-Id identifies it in the gateway's log.")
}

func passthroughError(e *PassthroughError) (int, wire.ErrorBody) {
	if e.Outside {
		return http.StatusNotFound, wire.NewError("invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Unknown request URL: %s %s. This gateway serves /v1 (chat completions, responses, models, and the paths its routes forward).", wire.Clip(e.Method), wire.Clip(e.Path)))
	}
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

// RefusedError is a request a route other than its first (another
// deployment, a fallback) cannot take in its upstream's protocol: the
// translation for it refused a member (a server tool, a hosted tool, a
// beta only Anthropic honours). The next deployment or route is tried.
type RefusedError struct {
	Route, Upstream string
	Protocol        translate.Protocol
	Err             error
}

func (e *RefusedError) Error() string { return "the request cannot go to " + e.reason() }

// reason names the route and what stopped it, in words a client may read
// (the refused member's own message).
func (e *RefusedError) reason() string {
	return fmt.Sprintf("route %s, whose upstream %s speaks %s: %v", e.Route, e.Upstream, e.Protocol, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// PassedOverError is an upstream's failure after which a deployment or
// fallback route could not take the request (RefusedError): the client
// is answered the failure, which says which member stopped each route
// passed over.
type PassedOverError struct {
	Err     error
	Refused []*RefusedError
}

func (e *PassedOverError) Error() string {
	return fmt.Sprintf("%v; %s", e.Err, e.note())
}

func (e *PassedOverError) Unwrap() error { return e.Err }

// note is the sentence the client's message gets: the routes passed over
// and why.
func (e *PassedOverError) note() string {
	parts := make([]string, len(e.Refused))
	for k, r := range e.Refused {
		parts[k] = r.reason()
	}
	return "No other route could take the request: " + strings.Join(parts, "; ") + "."
}

// moveOn is what a request that failed with prev (nil: nothing before)
// and then with err on the next deployment or route has failed with: the
// upstream's last failure, noting the routes that could not take the
// request; a refusal itself only when nothing else was tried.
func moveOn(prev, err error) error {
	refused, prevErr := passedOver(prev)
	more, last := passedOver(err)
	refused = append(refused, more...)
	if last == nil {
		last = prevErr
	}
	switch {
	case last == nil:
		return refused[0]
	case len(refused) == 0:
		return last
	}
	return &PassedOverError{Err: last, Refused: refused}
}

// passedOver splits a failure into the routes passed over and the
// upstream's failure.
func passedOver(err error) ([]*RefusedError, error) {
	switch e := err.(type) {
	case *PassedOverError:
		return e.Refused, e.Err
	case *RefusedError:
		return []*RefusedError{e}, nil
	}
	return nil, err
}

// dollars formats nano-dollars as dollars, to the micro-dollar.
func dollars(nano int64) string { return strconv.FormatFloat(budget.USD(nano), 'f', 6, 64) }

// modelMessage says why a route's upstream, whose URL names the model,
// cannot take a request's model.
func modelMessage(e *upstream.ModelError) string {
	if e.Model == "" {
		return "A model " + e.Reason + "."
	}
	return fmt.Sprintf("The model %q %s.", wire.Clip(e.Model), e.Reason)
}
