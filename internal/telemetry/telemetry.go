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
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/internal/enum"
)

// Provider is the tracer provider and how to flush and stop it.
type Provider struct {
	trace.TracerProvider
	// Shutdown exports what is buffered and stops; a no-op when off.
	Shutdown func(context.Context) error
	// Enabled says spans are exported.
	Enabled bool
}

// Protocol is how spans go to the collector: OTLP over gRPC or over
// HTTP (protobuf); unset, the environment says (OTEL_EXPORTER_OTLP_…
// PROTOCOL), else gRPC.
type Protocol uint8

// Protocols.
const (
	ProtocolUnset Protocol = iota
	GRPC
	HTTP
)

var protocolNames = []string{"", "grpc", "http/protobuf"}

func (p Protocol) String() string { return protocolNames[p] }

// Names are the configured names of the protocols ("" is unset).
func (Protocol) Names() []string { return slices.Clone(protocolNames) }

// Parse reads a protocol: grpc, or http/protobuf (http too, as the
// OpenTelemetry environment allows).
func (Protocol) Parse(s string) (Protocol, error) {
	if s == "http" {
		return HTTP, nil
	}
	return enum.Parse[Protocol](protocolNames, s)
}

// Options are the traces' configuration (telemetry in the config file).
type Options struct {
	// Endpoint is the collector's URL; "" leaves it to the environment
	// (OTEL_EXPORTER_OTLP_ENDPOINT), and with neither tracing is off.
	Endpoint string
	Protocol Protocol
}

// New returns the provider o and the environment (getenv) ask for: a
// no-op one when tracing is off. It does not dial: the exporter connects
// when it first sends.
func New(ctx context.Context, o Options, getenv func(string) string) (*Provider, error) {
	off := &Provider{TracerProvider: noop.NewTracerProvider(), Shutdown: func(context.Context) error { return nil }}
	endpoint := o.Endpoint
	envEndpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" || endpoint == "" && envEndpoint == "" {
		return off, nil
	}
	protocol := o.Protocol
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if protocol != ProtocolUnset || getenv(v) == "" {
			continue
		}
		p, err := Protocol(0).Parse(getenv(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		protocol = p
	}
	var exp sdktrace.SpanExporter
	var err error
	if protocol == HTTP {
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(tracesURL(endpoint)))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	} else {
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
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
