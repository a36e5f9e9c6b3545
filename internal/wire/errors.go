package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// ErrorBody is the OpenAI error shape, {"error":{"message","type","param","code"}}.
// It is the only error body toolgate writes, as a JSON response and as the
// single error event of a stream that has started (docs/spec.md §7).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an [ErrorBody]. Param and Code are written as
// JSON null when empty, as OpenAI does.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// UpstreamType is the error type the upstream named in an error object
	// it sent mid-response ([IncompleteError.Type]); never written in this
	// shape. A client API whose errors a translator names in its own
	// words keeps it (the Messages API: an Anthropic upstream's
	// overloaded_error, see translate.MessagesErrorType).
	UpstreamType string `json:"-"`
}

// NewError returns an ErrorBody; empty param or code become null.
func NewError(typ, code, param, message string) ErrorBody {
	d := ErrorDetail{Message: message, Type: typ}
	if param != "" {
		d.Param = &param
	}
	if code != "" {
		d.Code = &code
	}
	return ErrorBody{Error: d}
}

// JSON returns the body's encoding.
func (e ErrorBody) JSON() []byte {
	b, _ := json.Marshal(e) // only strings and string pointers: cannot fail
	return b
}

// UpstreamType is the type an upstream's error body names
// (error.type, a string: Anthropic's overloaded_error, OpenAI's
// server_error), or "".
func UpstreamType(body []byte) string {
	var v struct {
		Error struct {
			Type json.RawMessage `json:"type"`
		} `json:"error"`
	}
	var typ string
	if json.Unmarshal(body, &v) != nil || json.Unmarshal(v.Error.Type, &typ) != nil {
		return ""
	}
	return Clip(typ)
}

// UpstreamMessage extracts a human-readable message from an upstream error
// body: error.message (OpenAI and most compatibles), a top-level message or
// detail, or an error given as a plain string. It returns "" when the body
// has none of these.
func UpstreamMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	if len(v.Error) > 0 {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var d struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &d) == nil && d.Message != "" {
			return d.Message
		}
	}
	if v.Message != "" {
		return v.Message
	}
	var s string
	if json.Unmarshal(v.Detail, &s) == nil {
		return s
	}
	return ""
}

// MaxEcho is how much of a client's own input (a model name, a path, a
// header value) an error message or a log field repeats.
const MaxEcho = 256

// Clip returns s unchanged when it is at most MaxEcho bytes long, else its
// first MaxEcho bytes (cut at a character boundary) and "…(N bytes)"
// naming its full length: a client cannot make the gateway echo a
// megabyte into a response or a log line.
func Clip(s string) string {
	if len(s) <= MaxEcho {
		return s
	}
	cut := MaxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// ParamError is a client request the gateway refuses, nothing sent,
// because of one parameter: a value it cannot take, or (Unsupported) one
// it does not translate or serve. Every package that reads a request
// (policy, the translators) raises it; it becomes a 400 naming Param
// (code invalid_value, or unsupported_parameter).
type ParamError struct {
	Param       string
	Msg         string
	Unsupported bool
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }
