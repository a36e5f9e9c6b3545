package state

import (
	"slices"

	"github.com/toolgate/toolgate/internal/enum"
)

// Kind is where a kind of state lives: nowhere (responses not kept), in
// this replica's memory, or in Redis (shared by replicas).
type Kind uint8

// Kinds.
const (
	None Kind = iota
	Memory
	Redis
)

var kindNames = []string{"none", "memory", "redis"}

func (k Kind) String() string { return kindNames[k] }

// Names are the configured names of the kinds.
func (Kind) Names() []string { return slices.Clone(kindNames) }

// Parse reads a configured kind: none, memory or redis.
func (Kind) Parse(s string) (Kind, error) { return enum.Parse[Kind](kindNames, s) }
