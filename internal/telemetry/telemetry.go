// Package telemetry sets up OpenTelemetry tracing: off unless an OTLP
// endpoint is configured (telemetry.otlp_endpoint) or given by the
// standard environment (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn it off. The exporter speaks OTLP over
// gRPC (the default) or HTTP (telemetry.protocol, else
// OTEL_EXPORTER_OTLP_PROTOCOL); every other OTEL_* variable the SDK
// reads (headers, timeouts, the sampler, the resource and service name)
// applies as the OpenTelemetry SDK defines it. What the spans hold is
// observe's (SpanAttributes): they come from the request's record, like
// its log line and metrics.
package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/internal/config"
)

// Provider is the tracer provider and how to flush and stop it.
type Provider struct {
	trace.TracerProvider
	// Shutdown exports what is buffered and stops; a no-op when off.
	Shutdown func(context.Context) error
	// Enabled says spans are exported.
	Enabled bool
}

// New returns the provider cfg and the environment (getenv) ask for: a
// no-op one when tracing is off. It does not dial: the exporter connects
// when it first sends.
func New(ctx context.Context, cfg config.Telemetry, getenv func(string) string) (*Provider, error) {
	off := &Provider{TracerProvider: noop.NewTracerProvider(), Shutdown: func(context.Context) error { return nil }}
	endpoint := cfg.OTLPEndpoint
	envEndpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" || endpoint == "" && envEndpoint == "" {
		return off, nil
	}
	protocol := cfg.Protocol
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	}
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "grpc":
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	case "http/protobuf", "http":
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(tracesURL(endpoint)))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("telemetry.protocol: must be grpc or http/protobuf, got %q", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "toolgate")), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{TracerProvider: tp, Shutdown: tp.Shutdown, Enabled: true}, nil
}

// tracesURL is an OTLP/HTTP base URL with the traces path (/v1/traces)
// when it has no path of its own.
func tracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return endpoint
	}
	u.Path = "/v1/traces"
	return u.String()
}
