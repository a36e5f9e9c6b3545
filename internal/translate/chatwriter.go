package translate

// ChatWriter writes a chat completions request's messages into one
// buffer, as a client API's translator makes them: Next starts each
// message (its role), Member names each next member, the translator
// writes the values and closes each message with '}'.
type ChatWriter struct {
	Buf []byte
	N   int // messages started
}

// Next starts a message of role, after a comma when one came before.
func (w *ChatWriter) Next(role string) {
	if w.N > 0 {
		w.Buf = append(w.Buf, ',')
	}
	w.N++
	w.Buf = append(w.Buf, `{"role":"`...)
	w.Buf = append(w.Buf, role...)
	w.Buf = append(w.Buf, '"')
}

// Member writes the name of a message's next member.
func (w *ChatWriter) Member(name string) {
	w.Buf = append(w.Buf, ',', '"')
	w.Buf = append(w.Buf, name...)
	w.Buf = append(w.Buf, '"', ':')
}
