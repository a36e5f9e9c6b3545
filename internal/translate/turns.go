package translate

// Turns writes a body's turns as their blocks come, for a protocol whose
// turn is an object {"role":…,"<Member>":[blocks]} in an array of them
// (Gemini's contents, Bedrock's messages): a block of the role of the
// turn being written joins it, one of another role ends it and begins
// its own. A message that writes no block leaves nothing behind.
type Turns struct {
	Buf []byte
	// Role is the role of the turn being written, "" before the first.
	Role string
	// Member is the member that holds a turn's blocks.
	Member string
}

// Open readies Buf for a block in a turn of role, and reports whether it
// began a turn.
func (t *Turns) Open(role string) bool {
	switch {
	case role == t.Role:
		t.Buf = append(t.Buf, ',')
		return false
	case t.Role != "":
		t.Buf = append(t.Buf, "]},"...)
	}
	t.Buf = append(append(append(append(append(t.Buf, `{"role":"`...), role...), `","`...), t.Member...), `":[`...)
	t.Role = role
	return true
}

// End ends the last turn and the array of them (whose '[' the caller
// wrote).
func (t *Turns) End() {
	if t.Role != "" {
		t.Buf = append(t.Buf, "]}"...)
	}
	t.Buf = append(t.Buf, ']')
}
