// Package memlimit gives the Go runtime a memory limit from the
// container's: a soft limit (debug.SetMemoryLimit) at a share of the
// cgroup's memory limit, so that the collector works harder as the heap
// nears it instead of the process being killed past it. The Helm chart
// and the sidecar manifest set a memory limit (512Mi, 256Mi) and no
// GOMEMLIMIT; without this the runtime would not know of the limit at
// all.
//
// FromEnv leaves a process started with GOMEMLIMIT set to it, and one
// without a cgroup limit (no file, "max", or a value no host has) as it
// is. The limit is read once, at start: cgroup v2's memory.max, else
// cgroup v1's memory.limit_in_bytes.
package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the container's limit given to the runtime: the
// rest is for what the runtime does not count against it (thread stacks
// outside the heap's accounting, the binary's text, the kernel's page
// cache for the container).
const Share = 0.9

// Root is where the cgroup file system is mounted.
const Root = "/sys/fs/cgroup"

// noLimit: a cgroup v1 limit at or above this is "unlimited" (v1 writes
// the largest page-aligned int64).
const noLimit = 1 << 62

// Limit reads the cgroup memory limit under root, in bytes; ok is false
// when there is none.
func Limit(root string) (bytes int64, ok bool) {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= noLimit {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// FromEnv sets the runtime's soft memory limit to Share of the cgroup's
// under root unless GOMEMLIMIT is set, and returns the limit set (0 when
// none was).
func FromEnv(getenv func(string) string, root string) int64 {
	limit, ok := Limit(root)
	if !ok {
		return 0
	}
	return Apply(getenv, limit)
}

// Apply sets the runtime's soft memory limit to Share of limit (the
// memory the process may use: a configured one, or the container's),
// unless GOMEMLIMIT is set, and returns the limit set (0 when none was).
func Apply(getenv func(string) string, limit int64) int64 {
	if getenv("GOMEMLIMIT") != "" || limit <= 0 {
		return 0
	}
	soft := int64(math.Floor(float64(limit) * Share))
	debug.SetMemoryLimit(soft)
	return soft
}
