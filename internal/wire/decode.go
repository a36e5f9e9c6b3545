package wire

import (
	"errors"
	"fmt"
	"strconv"
)

// DecodeRequest decodes a chat-completions request body. It requires a JSON
// object with a non-empty string "model" and a non-empty "messages" array of
// objects that each have a string "role". The returned request refers to b's
// bytes (messages and members are slices of it): the caller must not modify
// b afterwards. Errors are *DecodeError: a syntax error carries the byte
// offset where it was found, a wrong type names the parameter.
func DecodeRequest(b []byte) (*ChatRequest, error) {
	i := skipSpace(b, 0)
	if i >= len(b) {
		return nil, &DecodeError{Offset: int64(i), Msg: "the request body is empty; send a JSON object"}
	}
	if b[i] != '{' {
		return nil, &DecodeError{Offset: int64(i), Msg: "the request body must be a JSON object"}
	}
	r := &ChatRequest{}
	r.obj.members = make([]member, 0, 16)
	var haveMessages bool
	o := readObject(b, i)
	for {
		ok, err := o.more()
		if err != nil {
			return nil, decodeError(err)
		}
		if !ok {
			break
		}
		key, escaped, at, err := o.key()
		if err != nil {
			return nil, decodeError(err)
		}
		k := keyString(key, escaped)
		var end int
		if k == "messages" {
			r.Messages, end, err = decodeMessages(b, at)
			haveMessages = true
		} else {
			end, err = skipValue(b, at, 1)
		}
		if err != nil {
			return nil, decodeError(err)
		}
		r.obj.members = append(r.obj.members, member{key: k, rawKey: b[o.i : o.i+len(key)+2], value: b[at:end]})
		o.i = end
	}
	if j := skipSpace(b, o.i); j < len(b) {
		return nil, &DecodeError{Offset: int64(j), Msg: fmt.Sprintf("invalid JSON: unexpected data after the top-level object at byte offset %d", j)}
	}
	if v, ok := r.obj.Get("model"); ok {
		if v[0] != '"' {
			return nil, &DecodeError{Param: "model", Offset: -1, Msg: "must be a string, got " + kindAt(v, 0)}
		}
		_, escaped, _ := skipString(v, 0)
		r.Model = stringValue(v, 0, len(v), escaped)
	}
	if r.Model == "" {
		return nil, &DecodeError{Param: "model", Offset: -1, Msg: "you must provide a model parameter (a non-empty string)"}
	}
	if v, ok := r.obj.Get("stream"); ok {
		switch string(v) {
		case "true":
			r.Stream = true
		case "false", "null":
		default:
			return nil, &DecodeError{Param: "stream", Offset: -1, Msg: "must be a boolean, got " + kindAt(v, 0)}
		}
	}
	if !haveMessages {
		return nil, &DecodeError{Param: "messages", Offset: -1, Msg: "you must provide a messages parameter (a non-empty array of messages)"}
	}
	if len(r.Messages) == 0 {
		return nil, &DecodeError{Param: "messages", Offset: -1, Msg: "must contain at least one message"}
	}
	r.raw = b
	return r, nil
}

func decodeError(err error) error {
	var se *syntaxErr
	if errors.As(err, &se) {
		if se.eof {
			return &DecodeError{Offset: int64(se.off), Msg: fmt.Sprintf("invalid JSON: the body ends early (at byte offset %d)", se.off), Err: err}
		}
		return &DecodeError{Offset: int64(se.off), Msg: fmt.Sprintf("invalid JSON at byte offset %d: %s", se.off, se.msg), Err: err}
	}
	return err
}

// typeError is a value of the wrong JSON type at a parameter path.
func typeError(param string, b []byte, at int, want string) error {
	return &DecodeError{Param: param, Offset: -1, Msg: "must be " + want + ", got " + kindAt(b, at)}
}

// errWrongType marks a value of the wrong type; the caller names the
// parameter (built only then, so decoding builds no strings on success).
var errWrongType = errors.New("wrong type")

// stringAt decodes the string at b[at] (null gives ""), returning the
// value's end; a value of another type is errWrongType.
func stringAt(b []byte, at int) (string, int, error) {
	switch b[at] {
	case '"':
		end, escaped, err := skipString(b, at)
		if err != nil {
			return "", 0, err
		}
		return stringView(b, at, end, escaped), end, nil
	case 'n':
		end, err := skipLiteral(b, at, "null")
		return "", end, err
	}
	end, err := skipValue(b, at, 1)
	if err != nil {
		return "", 0, err
	}
	return "", end, errWrongType
}

// msgParam names a message field for errors: messages[n].field.
func msgParam(n int, field string) string { return "messages[" + strconv.Itoa(n) + "]" + field }

// callParam names a tool-call field: messages[n].tool_calls[k].field.
func callParam(n, k int, field string) string {
	return msgParam(n, ".tool_calls["+strconv.Itoa(k)+"]"+field)
}

func decodeMessages(b []byte, at int) ([]Message, int, error) {
	if b[at] != '[' {
		if _, err := skipValue(b, at, 1); err != nil {
			return nil, 0, err
		}
		return nil, 0, typeError("messages", b, at, "an array of message objects")
	}
	// Sized from the body (a transcript's messages are typically some
	// hundreds of bytes), so a long transcript does not regrow the slice.
	msgs := make([]Message, 0, min(max(len(b)/400, 8), 4096))
	r := readArray(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return msgs, r.i, nil
		}
		msgs = append(msgs, Message{})
		if r.i, err = decodeMessage(b, r.i, len(msgs)-1, &msgs[len(msgs)-1]); err != nil {
			return nil, 0, err
		}
	}
}

func decodeMessage(b []byte, at, n int, m *Message) (int, error) {
	if b[at] != '{' {
		if _, err := skipValue(b, at, 2); err != nil {
			return 0, err
		}
		return 0, typeError(msgParam(n, ""), b, at, "a message object")
	}
	r := readObject(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		key, escaped, v, err := r.key()
		if err != nil {
			return 0, err
		}
		k := string(key) // no allocation: only compared
		if escaped {
			k = keyString(key, escaped)
		}
		var end int
		switch k {
		case "role":
			if m.Role, end, err = stringAt(b, v); err == nil {
				m.Role = intern(m.Role)
			} else if err == errWrongType {
				err = typeError(msgParam(n, ".role"), b, v, "a string")
			}
		case "name":
			if m.Name, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(msgParam(n, ".name"), b, v, "a string")
			}
		case "tool_call_id":
			if m.ToolCallID, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(msgParam(n, ".tool_call_id"), b, v, "a string")
			}
		case "content":
			if end, err = skipValue(b, v, 3); err == nil {
				m.Content = b[v:end]
			}
		case "tool_calls":
			m.ToolCalls, end, err = decodeToolCalls(b, v, n)
		default:
			end, err = skipValue(b, v, 3)
		}
		if err != nil {
			return 0, err
		}
		r.i = end
	}
	m.Raw = b[at:r.i]
	if m.Role == "" {
		return 0, &DecodeError{Param: msgParam(n, ".role"), Offset: -1, Msg: "is required (system, user, assistant or tool)"}
	}
	return r.i, nil
}

// intern returns the usual roles as constants, so they share no memory
// with the body.
func intern(role string) string {
	switch role {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	case "system":
		return "system"
	case "developer":
		return "developer"
	}
	return role
}

func decodeToolCalls(b []byte, at, n int) ([]ToolCall, int, error) {
	switch b[at] {
	case 'n':
		end, err := skipLiteral(b, at, "null")
		return nil, end, err
	case '[':
	default:
		if _, err := skipValue(b, at, 3); err != nil {
			return nil, 0, err
		}
		return nil, 0, typeError(msgParam(n, ".tool_calls"), b, at, "an array of tool calls")
	}
	var calls []ToolCall
	r := readArray(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return calls, r.i, nil
		}
		calls = append(calls, ToolCall{})
		if r.i, err = decodeToolCall(b, r.i, n, len(calls)-1, &calls[len(calls)-1]); err != nil {
			return nil, 0, err
		}
	}
}

func decodeToolCall(b []byte, at, n, k int, c *ToolCall) (int, error) {
	if b[at] != '{' {
		if _, err := skipValue(b, at, 4); err != nil {
			return 0, err
		}
		return 0, typeError(callParam(n, k, ""), b, at, "a tool call object")
	}
	r := readObject(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return 0, err
		}
		if !ok {
			c.Raw = b[at:r.i]
			return r.i, nil
		}
		key, escaped, v, err := r.key()
		if err != nil {
			return 0, err
		}
		var end int
		switch keyString(key, escaped) {
		case "id":
			if c.ID, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(callParam(n, k, ".id"), b, v, "a string")
			}
		case "type":
			if c.Type, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(callParam(n, k, ".type"), b, v, "a string")
			}
		case "function":
			end, err = decodeFunction(b, v, n, k, &c.Function)
		default:
			end, err = skipValue(b, v, 5)
		}
		if err != nil {
			return 0, err
		}
		r.i = end
	}
}

func decodeFunction(b []byte, at, n, k int, f *FunctionCall) (int, error) {
	switch b[at] {
	case 'n':
		return skipLiteral(b, at, "null")
	case '{':
	default:
		if _, err := skipValue(b, at, 5); err != nil {
			return 0, err
		}
		return 0, typeError(callParam(n, k, ".function"), b, at, "an object")
	}
	r := readObject(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return 0, err
		}
		if !ok {
			return r.i, nil
		}
		key, escaped, v, err := r.key()
		if err != nil {
			return 0, err
		}
		var end int
		switch keyString(key, escaped) {
		case "name":
			if f.Name, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(callParam(n, k, ".function.name"), b, v, "a string")
			}
		case "arguments":
			if end, err = skipValue(b, v, 6); err == nil {
				f.Arguments = b[v:end]
			}
		default:
			end, err = skipValue(b, v, 6)
		}
		if err != nil {
			return 0, err
		}
		r.i = end
	}
}
