package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// Reach is a part of a request that reaches past the request itself at
// the upstream, with the gateway's upstream key: an object the upstream
// keeps for its whole organization (a file, a stored item, a vector
// store, a container, an MCP server), shared by every client key of a
// route, or a billed service tier. A route allows them by kind
// (routes[].org_wide); any other is refused, naming Param.
type Reach struct {
	Kind  string // one of OrgWideKinds
	Param string // the member, as a path: input[2].content[0].file_id
}

// The kinds of Reach, as routes[].org_wide names them.
const (
	ReachFiles        = "files"
	ReachItems        = "items"
	ReachVectorStores = "vector_stores"
	ReachContainers   = "containers"
	ReachMCPServers   = "mcp_servers"
	ReachServiceTier  = "service_tier"
)

// OrgWideKinds are the kinds of Reach.
var OrgWideKinds = []string{ReachFiles, ReachItems, ReachVectorStores, ReachContainers, ReachMCPServers, ReachServiceTier}

// Error is the refusal of a reach its route does not allow: a 400
// naming the member.
func (r Reach) Error() error {
	what := map[string]string{
		ReachFiles:        "a file the upstream keeps",
		ReachItems:        "an item the upstream keeps",
		ReachVectorStores: "vector stores the upstream keeps",
		ReachContainers:   "a container the upstream keeps",
		ReachMCPServers:   "an MCP server the upstream calls",
		ReachServiceTier:  "a billed service tier",
	}[r.Kind]
	return &wire.ParamError{Param: r.Param, Msg: fmt.Sprintf("names %s, shared by every key of this gateway's upstream account, which this route does not allow (routes[].org_wide: %s)", what, r.Kind)}
}

// ServiceTier is the reach of a service_tier member asking for another
// tier than the default (defaults lists the protocol's names for it:
// "auto", "default", "standard_only"); ok is false for none.
func ServiceTier(raw json.RawMessage, defaults ...string) (Reach, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return Reach{}, false
	}
	var tier string
	if json.Unmarshal(raw, &tier) == nil && slices.Contains(defaults, tier) {
		return Reach{}, false
	}
	return Reach{Kind: ReachServiceTier, Param: "service_tier"}, true
}

// HostedAllowed reports whether a list of hosted tool types
// (routes[].hosted_tools) allows typ: an entry allows the type of its
// name and its variants (web_search allows web_search_preview and
// web_search_20250305).
func HostedAllowed(list []string, typ string) bool {
	for _, name := range list {
		if typ == name || strings.HasPrefix(typ, name+"_") {
			return true
		}
	}
	return false
}

// ChatReaches lists what a chat completions request reaches past itself:
// file parts naming an uploaded file (file.file_id) and a service tier.
func ChatReaches(req *wire.ChatRequest) []Reach {
	var out []Reach
	if raw, ok := req.Get("service_tier"); ok {
		if r, ok := ServiceTier(raw, "auto", "default"); ok {
			out = append(out, r)
		}
	}
	// Every request of a chat client comes this way: the parts are read
	// in place (wire.Member), nothing decoded or copied.
	for i := range req.Messages {
		c := req.Messages[i].Content
		if len(c) == 0 || c[0] != '[' {
			continue
		}
		wire.EachElement(c, func(k int, part []byte) bool {
			typ, _ := wire.Member(part, "type")
			file, _ := wire.Member(part, "file")
			id, _ := wire.Member(file, "file_id")
			if t, _ := wire.String(typ); t == "file" && len(id) > 0 && string(id) != "null" && string(id) != `""` {
				out = append(out, Reach{Kind: ReachFiles, Param: fmt.Sprintf("messages[%d].content[%d].file.file_id", i, k)})
			}
			return true
		})
	}
	return out
}
