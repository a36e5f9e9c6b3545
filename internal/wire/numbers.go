package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Range is what a numeric request parameter may be: an integer or any
// number, within [Min, Max].
type Range struct {
	Integer  bool
	Min, Max float64
}

// The ranges of the numeric parameters the gateway reads or maps onto
// another protocol.
var (
	// OutputTokens: max_tokens, max_completion_tokens, max_output_tokens,
	// a thinking budget. Beyond an int32 no model's limit lies, and some
	// upstreams' parsers overflow.
	OutputTokens = Range{Integer: true, Min: 1, Max: 1<<31 - 1}
	// Choices: n.
	Choices     = Range{Integer: true, Min: 1, Max: 128}
	Temperature = Range{Min: 0, Max: 2}
	TopP        = Range{Min: 0, Max: 1}
)

// CheckNumber checks the raw JSON value of a numeric parameter: absent or
// null passes; anything else must be a JSON number (an integer literal,
// for an integer range) within r, or it is a *DecodeError naming param
// and the range.
func CheckNumber(param string, raw []byte, r Range) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	want := "a number"
	if r.Integer {
		want = "an integer"
	}
	bad := func() error {
		return &DecodeError{Kind: KindValue, Param: param, Offset: -1,
			Msg: fmt.Sprintf("must be %s from %s to %s, got %s", want, fmtBound(r.Min), fmtBound(r.Max), Clip(string(raw)))}
	}
	var v float64
	if r.Integer {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return bad()
		}
		v = float64(n)
	} else {
		var n json.Number
		if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
			return bad()
		}
		f, err := n.Float64()
		if err != nil {
			return bad()
		}
		v = f
	}
	if v < r.Min || v > r.Max {
		return bad()
	}
	return nil
}

func fmtBound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// CheckNumbers checks the numeric parameters of a chat request the gateway
// reads or maps onto another protocol (max_tokens,
// max_completion_tokens, n, temperature, top_p, thinking.budget_tokens),
// before anything reads them: an upstream would read an out-of-range or
// mistyped value its own way (a default, an overflow) where the gateway
// read another.
func (r *ChatRequest) CheckNumbers() error {
	for _, c := range []struct {
		param string
		r     Range
	}{{"max_tokens", OutputTokens}, {"max_completion_tokens", OutputTokens}, {"n", Choices}, {"temperature", Temperature}, {"top_p", TopP}} {
		raw, _ := r.Get(c.param)
		if err := CheckNumber(c.param, raw, c.r); err != nil {
			return err
		}
	}
	if raw, ok := r.Get("thinking"); ok && len(raw) > 0 && raw[0] == '{' {
		if o, err := ParseObject(raw); err == nil {
			v, _ := o.Get("budget_tokens")
			return CheckNumber("thinking.budget_tokens", v, OutputTokens)
		}
	}
	return nil
}
