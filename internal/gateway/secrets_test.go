package gateway_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"go.uber.org/goleak"
)

// Secrets the tests use: the upstream key, the client keys presented
// (all start with sk-), as bare values and as bearer credentials.
var secrets = []string{"upstream-secret", "sk-team-a", "sk-team-b", "sk-wrong", "sk-a\"", "sk-b\"", "sk-30", "sk-31", "sk-combo", "sk-fuzz-a", "sk-fuzz-b", "sk-ops-example", "Bearer sk-"}

// TestMain runs the package's tests, then greps everything the gateways
// logged and answered for a secret: none may appear.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		all := gatewaytest.Seen()
		if len(all) < 10000 && flag.Lookup("test.run").Value.String() == "" {
			println("secrets check: too little was recorded to be meaningful:", len(all), "bytes")
			code = 1
		}
		for _, s := range secrets {
			if i := strings.Index(all, s); i >= 0 {
				println("secrets check: found", s, "in:", all[max(i-200, 0):min(i+100, len(all))])
				code = 1
			}
		}
		if code == 0 {
			// go-redis probes a node it failed to dial (a stopped Redis,
			// a cluster's failed primary) from a goroutine that ends within
			// a second of the client's Close: not a leak.
			if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
				println("goleak:", err.Error())
				code = 1
			}
		}
	}
	os.Exit(code)
}
