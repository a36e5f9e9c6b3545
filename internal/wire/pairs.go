package wire

import (
	"fmt"
	"strings"
)

// PairingError is a transcript that OpenAI (and the providers that follow
// its rules) refuses with a 400, worded as OpenAI words it (docs/quirks.md C01–C03).
type PairingError struct {
	// Index is the position of the offending message.
	Index int
	// Param is OpenAI's param for the error, e.g. "messages.[3].role".
	Param string
	Msg   string
}

func (e *PairingError) Error() string { return e.Msg }

// CheckToolPairs applies OpenAI's rules for tool calls in a transcript and
// returns the first violation as a *PairingError, or nil:
//
//   - every call of an assistant message has a non-empty id, unique within
//     the message;
//   - an assistant message with tool_calls is directly followed by tool
//     messages answering each of its call ids (C01);
//   - a tool message answers a call of the assistant message its run of tool
//     messages follows (C02), and no call is answered twice (C03).
//
// The simulator's strict mode answers with these errors, and the repair
// tests use CheckToolPairs as their oracle.
func CheckToolPairs(msgs []Message) error {
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == "tool":
			return &PairingError{Index: i, Param: fmt.Sprintf("messages.[%d].role", i),
				Msg: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
		case m.Role != "assistant" || len(m.ToolCalls) == 0:
			continue
		}
		pending := make([]string, 0, len(m.ToolCalls))
		for j, c := range m.ToolCalls {
			if c.ID == "" {
				return &PairingError{Index: i, Param: fmt.Sprintf("messages.[%d].tool_calls.[%d].id", i, j),
					Msg: fmt.Sprintf("Invalid 'messages[%d].tool_calls[%d].id': empty string. Expected a string with minimum length 1, but got an empty string instead.", i, j)}
			}
			for _, p := range pending {
				if p == c.ID {
					return &PairingError{Index: i, Param: fmt.Sprintf("messages.[%d].tool_calls.[%d].id", i, j),
						Msg: fmt.Sprintf("Invalid parameter: Duplicate value for 'tool_call_id' of '%s' in messages[%d].", c.ID, i)}
				}
			}
			pending = append(pending, c.ID)
		}
		answeredAt := map[string]int{}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
			id := msgs[j].ToolCallID
			if at, ok := answeredAt[id]; ok {
				return &PairingError{Index: j, Param: fmt.Sprintf("messages.[%d].tool_call_id", j),
					Msg: fmt.Sprintf("Invalid parameter: Duplicate value for 'tool_call_id' of '%s', in messages[%d] and messages[%d].", id, at, j)}
			}
			k := indexOf(pending, id)
			if k < 0 {
				return &PairingError{Index: j, Param: fmt.Sprintf("messages.[%d].role", j),
					Msg: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
			}
			pending = append(pending[:k], pending[k+1:]...)
			answeredAt[id] = j
		}
		if len(pending) > 0 {
			return &PairingError{Index: i, Param: fmt.Sprintf("messages.[%d].role", i),
				Msg: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
					"The following tool_call_ids did not have response messages: " + strings.Join(pending, ", ")}
		}
		i = j - 1
	}
	return nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
