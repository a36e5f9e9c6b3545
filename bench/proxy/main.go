// Command bench-proxy is the benchmark's floor: a bare
// httputil.ReverseProxy (FlushInterval -1, so streams are flushed at every
// write) in front of one upstream, with the same keep-alive pool size as
// toolgate's upstream client. No logging, no metrics.
//
// Its one addition to the bare proxy is full duplex: Go's HTTP/1 server
// closes a request's body when the handler starts its response, and an
// upstream that answers before the transport has finished sending that
// body (or before the transport's last read of it, which checks the body
// is no longer than its Content-Length) then has its connection torn down
// mid-answer: the client's stream ends early, and the proxy logs "read
// error during body copy: use of closed network connection"
// (golang/go#40747). Under load that cut 0.5–3% of the proxy's streams,
// which then cost it less CPU than a whole stream: not a floor.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:8081", "upstream base URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-proxy:", err)
		os.Exit(2)
	}
	srv := &http.Server{Addr: *listen, Handler: newProxy(u), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("bench-proxy listening on http://%s -> %s\n", *listen, u)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-proxy:", err)
		os.Exit(1)
	}
}

// newProxy is the bare proxy to u, in full duplex.
func newProxy(u *url.URL) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256 // as toolgate's upstream client
	rp.Transport = tr
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex() // the body stays readable once the answer starts
		rp.ServeHTTP(w, r)
	})
}
