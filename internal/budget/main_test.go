package budget

import (
	"testing"

	"go.uber.org/goleak"
)

// The Redis store's client must leave no goroutine behind once closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
