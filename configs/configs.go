// Package configs holds toolgate's example configurations and embeds the
// default one, used when the gateway starts with no config file.
package configs

import _ "embed"

// Default is the embedded default configuration (default.yaml): every model
// is routed to the built-in simulator, so toolgate runs with no API key.
//
//go:embed default.yaml
var Default []byte
