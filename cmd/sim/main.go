// Command toolgate-sim runs the simulated OpenAI-compatible provider on its
// own: `go run ./cmd/sim --listen 127.0.0.1:8081`, then point an OpenAI
// client (or a toolgate upstream) at http://127.0.0.1:8081/v1. The model
// name picks the behaviour; see package internal/sim.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/sim"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to listen on")
	fast := flag.Bool("fast", false, "serve pre-encoded responses (for benchmarks)")
	chunks := flag.Int("chunks", 8, "content chunks per text answer")
	delay := flag.Duration("delay", 0, "pause between stream chunks")
	status := flag.Int("status", 0, "fail every chat request with this status (a deployment that is down or rate-limited)")
	retryAfter := flag.Duration("retry-after", 0, "with --status, the Retry-After sent")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolgate-sim:", err)
		os.Exit(1)
	}
	srv := &http.Server{
		Handler:           sim.New(sim.Options{Fast: *fast, Chunks: *chunks, ChunkDelay: *delay, Status: *status, RetryAfter: *retryAfter}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Printf("toolgate-sim listening on http://%s/v1\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "toolgate-sim:", err)
		os.Exit(1)
	}
}
