# toolgate: a static binary in a minimal, non-root image.
#   make image            (docker build -t toolgate:dev .)
#   docker run -p 8080:8080 -p 9090:9090 toolgate:dev --admin-listen :9090
# With no config file the embedded default (every model to the built-in
# simulator) is used; mount one and set TOOLGATE_CONFIG (or --config).
# Check a config without starting anything (every problem with its field
# path, exit 1; exit 0 when valid):
#   docker run --rm -v $PWD/gw.yaml:/gw.yaml toolgate:dev check --config /gw.yaml

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY configs ./configs
COPY internal ./internal
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/toolgate ./cmd/gateway

# distroless/static: CA certificates, /etc/passwd with a nonroot user, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolgate /usr/local/bin/toolgate
# Main listener (OpenAI-compatible API) and admin listener (/metrics, /healthz, /readyz).
EXPOSE 8080 9090
USER nonroot:nonroot
# No HEALTHCHECK: the platform probes /healthz and /readyz on the admin port
# (listening on loopback by default: pass --admin-listen :9090, or set
# admin_listen, where probes and the scrape come from outside the container).
ENTRYPOINT ["/usr/local/bin/toolgate"]
