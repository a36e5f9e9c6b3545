// Command bench-proxy is the benchmark's floor: a bare
// httputil.ReverseProxy (FlushInterval -1, so streams are flushed at every
// write) in front of one upstream, with the same keep-alive pool size as
// toolgate's upstream client. No logging, no metrics.
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
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256 // as toolgate's upstream client
	rp.Transport = tr
	srv := &http.Server{Addr: *listen, Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("bench-proxy listening on http://%s -> %s\n", *listen, u)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-proxy:", err)
		os.Exit(1)
	}
}
