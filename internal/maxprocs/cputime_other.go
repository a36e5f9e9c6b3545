//go:build !unix

package maxprocs

import "time"

// cpuTime is not read here: Start leaves the runtime's default.
func cpuTime() (time.Duration, bool) { return 0, false }
