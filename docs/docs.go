// Package docs holds toolgate's documents; its test checks that every
// reference to them, from the code and from the documents themselves,
// resolves: each link's file and anchor, each spec section cited as §N,
// each quirk id. The quirk catalogue is also embedded ([Quirks]), for the
// console's page of it.
package docs

import _ "embed"

// Quirks is docs/quirks.md.
//
//go:embed quirks.md
var Quirks []byte
