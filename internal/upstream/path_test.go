package upstream

import (
	"net/url"
	"strings"
	"testing"
)

// Paths that could name another resource once decoded or normalized are
// refused; others are forwarded below the base path, with their query.
func TestJoinPath(t *testing.T) {
	base, _ := url.Parse("https://api.example.com/openai/v1")
	for _, tc := range []struct {
		raw, want string // want "" : refused
	}{
		{"/v1/files?limit=2", "https://api.example.com/openai/v1/files?limit=2"},
		{"/v1/audio/speech", "https://api.example.com/openai/v1/audio/speech"},
		{"/v1/files/", "https://api.example.com/openai/v1/files/"},
		{"/v1/a%20b", "https://api.example.com/openai/v1/a%20b"},
		{"/v1/audio/%2e%2e/%2e%2e/admin", ""},
		{"/v1/audio/../x", ""},
		{"/v1/./x", ""},
		{"/v1/x%3fy", ""},
		{"/v1/x%23y", ""},
		{"/v1/a%2fb", ""},
		{"/v1/a%2Fb", ""},
		{"/v1/a%5cb", ""},
		{"/v1/a%00b", ""},
		{"/v1/%252e%252e", ""},
		{"/v1//x", ""},
		{"/v1/a\\b", ""},
		// Dot segments with ;parameters, which Tomcat, Jetty and Spring
		// resolve as the dot segment, encoded or not.
		{"/v1/audio/..;/..;/fine_tuning/jobs", ""},
		{"/v1/audio/%2e%2e;/x", ""},
		{"/v1/.;/x", ""},
		{"/v1/..;jsessionid=1/x", ""},
		{"/v1/a;b/c", "https://api.example.com/openai/v1/a;b/c"},
	} {
		u, err := url.ParseRequestURI(tc.raw)
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		got, err := forwardURL(base, u)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: forwarded as %s", tc.raw, got)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q %v, want %s", tc.raw, got, err, tc.want)
		}
	}
}

// forwardURL is what the gateway does with a request's URL on the rest of
// /v1: check it as it came (the router's check), then build the
// upstream's URL from the path below /v1.
func forwardURL(base *url.URL, u *url.URL) (string, error) {
	if err := CheckEscapedPath(u); err != nil {
		return "", err
	}
	return joinPath(base, strings.TrimPrefix(u.Path, "/v1"), u.RawQuery)
}

// FuzzPassthroughPath sends arbitrary request paths through the router's
// check and the URL builder: whatever is forwarded has the base path as
// its prefix, no dot segment, nothing a second decoding would change, and
// the client's query as its only query.
func FuzzPassthroughPath(f *testing.F) {
	for _, s := range []string{"/v1/files", "/v1/audio/%2e%2e/%2e%2e/admin", "/v1/x%3fy=1?z=2", "/v1/a%2fb", "/v1/%252e%252e/x",
		"/v1/files/file-1/content?x=%2e%2e", "/v1/a/../../b", "/v1/%E2%80%AE", "/v1/a;b/c", "/v1/a%252fb", "/v1/audio/..;/..;/fine_tuning/jobs", "/v1/%2e%2e;x/y"} {
		f.Add(s, "/openai/v1")
	}
	f.Fuzz(func(t *testing.T, raw, basePath string) {
		base, err := url.Parse("https://upstream.example" + basePath)
		if err != nil || base.Host != "upstream.example" || base.RawQuery != "" || base.Fragment != "" || CheckPath("/"+strings.TrimPrefix(base.Path, "/")) != nil {
			return
		}
		u, err := url.ParseRequestURI(raw)
		if err != nil || !strings.HasPrefix(u.Path, "/v1/") {
			return
		}
		built, err := forwardURL(base, u)
		if err != nil {
			return
		}
		got, err := url.Parse(built)
		if err != nil {
			t.Fatalf("%q built %q, which does not parse: %v", raw, built, err)
		}
		prefix := strings.TrimSuffix(base.Path, "/") + "/"
		switch {
		case got.Host != base.Host:
			t.Fatalf("%q built %q: another host", raw, built)
		case !strings.HasPrefix(got.Path, prefix):
			t.Fatalf("%q built %q: not below %s", raw, built, prefix)
		case strings.Contains(got.Path, "%") || strings.Contains(got.EscapedPath(), "%2F") || strings.Contains(got.EscapedPath(), "%2f"):
			t.Fatalf("%q built %q: a second decoding would change it", raw, built)
		case got.RawQuery != escapeQuery(u.RawQuery) || got.Fragment != "":
			t.Fatalf("%q built %q: query %q, want %q", raw, built, got.RawQuery, escapeQuery(u.RawQuery))
		}
		for seg := range strings.SplitSeq(strings.TrimPrefix(got.Path, prefix), "/") {
			if seg, _, _ = strings.Cut(seg, ";"); seg == "." || seg == ".." {
				t.Fatalf("%q built %q: a dot segment", raw, built)
			}
		}
	})
}
