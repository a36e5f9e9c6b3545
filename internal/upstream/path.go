package upstream

import (
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// PathError is a path the gateway will not forward: once decoded it
// could name something other than what it seems to (a dot segment, an
// encoded separator, a control character).
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return "the path " + wire.Clip(e.Path) + " " + e.Reason }

// CheckPath checks a decoded request path that is to be forwarded: it
// must start with "/", and hold no "." or ".." segment (nor one that is
// so before a ";" and its parameters), no empty segment
// (a trailing "/" aside), no "?", "#", "\", "%" and no control character.
// What passes can be appended to a base path and stays below it, however
// the upstream decodes or normalizes it.
func CheckPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return &PathError{Path: p, Reason: "does not start with /"}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f:
			return &PathError{Path: p, Reason: "holds a control character"}
		case c == '?' || c == '#':
			return &PathError{Path: p, Reason: "holds an encoded '?' or '#'"}
		case c == '\\':
			return &PathError{Path: p, Reason: `holds a '\'`}
		case c == '%':
			return &PathError{Path: p, Reason: "holds an encoded '%' (a path encoded twice)"}
		}
	}
	rest := p[1:]
	for seg := range strings.SplitSeq(rest, "/") {
		// A segment's ";…" parameters are dropped by some servers before
		// they resolve dot segments (Tomcat, Jetty and Spring read "..;"
		// as ".."): the name before them is what counts.
		name, _, _ := strings.Cut(seg, ";")
		switch name {
		case ".", "..":
			return &PathError{Path: p, Reason: "holds a dot segment (. or .., with or without ;parameters)"}
		}
	}
	if strings.Contains(strings.TrimSuffix(rest, "/"), "//") || rest != "" && rest[0] == '/' {
		return &PathError{Path: p, Reason: "holds an empty segment (//)"}
	}
	return nil
}

// CheckEscapedPath checks a request path as it came on the wire (still
// percent-encoded): an encoded '/' (or '\'), which a server may decode
// into a separator after the gateway routed the path, is refused; then
// the decoded path must pass CheckPath.
func CheckEscapedPath(u *url.URL) error {
	esc := u.EscapedPath()
	for i := 0; i+2 < len(esc); i++ {
		if esc[i] != '%' {
			continue
		}
		switch strings.ToLower(esc[i+1 : i+3]) {
		case "2f":
			return &PathError{Path: u.Path, Reason: "holds an encoded '/'"}
		case "5c":
			return &PathError{Path: u.Path, Reason: `holds an encoded '\'`}
		}
	}
	return CheckPath(u.Path)
}

// joinPath returns the URL of path (checked by CheckPath) below base's
// path, with query as its query: never above base's path, and with no
// query but the one given.
func joinPath(base *url.URL, path, query string) (string, error) {
	if err := CheckPath(path); err != nil {
		return "", err
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = escapeQuery(query)
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// escapeQuery percent-encodes the bytes a query may not hold as they are
// ('#', spaces, controls, non-ASCII): the client's query is passed on as
// it meant it, and nothing in it ends the query early upstream.
func escapeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '#' || c <= ' ' || c >= 0x7f {
			if b.Len() == 0 {
				b.WriteString(q[:i])
			}
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return q
	}
	return b.String()
}
