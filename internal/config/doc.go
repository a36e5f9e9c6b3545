// Package config is toolgate's configuration: one YAML file, decoded
// strictly (an unknown key is an error), with `${ENV}` expansion in values,
// named defaults for everything optional, and validation at load that reports
// every problem at once, each naming the field path (docs/spec.md §7's "say what was
// wrong and what to change" applies to operators too).
//
// [Load] is the only entry point: YAML → `${NAME}` expansion → defaults →
// [Config.Validate] → resolution of derived values (the route table). A
// missing environment variable is an error naming the field that uses it;
// write `$${` for a literal `${`.
//
// With no file, the embedded default config (configs/default.yaml) routes
// every model to the built-in simulator, so the gateway runs with no key.
//
// Routes: a route's `model` is an exact model name or a pattern in which `*`
// matches any run of characters (including `/`). Exact names win over
// patterns; patterns are tried in file order. An empty `upstream_model` sends
// the client's model name unchanged.
package config
