package budget

import (
	"testing"

	"go.uber.org/goleak"
)

// The Redis store's client must leave no goroutine behind once closed.
// go-redis probes a node it failed to dial from a goroutine that ends
// within a second of the client's Close (pool.tryDial): not a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
