// Package observe is toolgate's logging and metrics: the zap JSON logger,
// the Prometheus metrics (all named toolgate_…), the per-request
// [Record] that becomes one access-log line and the metric updates, and the
// request-id middleware.
//
// observe is a leaf: it knows nothing of the pipeline's types. The gateway
// fills a Record with plain values and hands it over once, at the end of the
// request, so the log and the metrics cannot disagree.
//
// Labels come only from bounded sets: configured route and upstream names,
// HTTP status codes, and fixed kind/outcome vocabularies. A request whose
// model matched no route is labelled route="none".
package observe
