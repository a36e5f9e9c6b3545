package policy

import (
	"slices"

	"github.com/toolgate/toolgate/internal/enum"
)

// Delivery is how a route's tool-call fragments reach the client.
type Delivery uint8

// Deliveries.
const (
	DeliverStream Delivery = iota // forwarded once a call's id and name are known (the default)
	DeliverBuffer                 // held until the response is complete and judged
)

var deliveryNames = []string{"stream", "buffer"}

func (d Delivery) String() string { return deliveryNames[d] }

// Names are the configured names of the deliveries.
func (Delivery) Names() []string { return slices.Clone(deliveryNames) }

// Parse reads a configured delivery: stream or buffer.
func (Delivery) Parse(s string) (Delivery, error) { return enum.Parse[Delivery](deliveryNames, s) }

// MissAction is what a route does when reasoning the upstream needs back
// could not be restored.
type MissAction uint8

// Miss actions.
const (
	MissSend            MissAction = iota // send the request as it is (the default)
	MissDisableThinking                   // send it with thinking off
)

var missNames = []string{"send", "disable_thinking"}

func (m MissAction) String() string { return missNames[m] }

// Names are the configured names of the actions.
func (MissAction) Names() []string { return slices.Clone(missNames) }

// Parse reads a configured action: send or disable_thinking.
func (MissAction) Parse(s string) (MissAction, error) {
	return enum.Parse[MissAction](missNames, s)
}

// ForcedAction is what a route does with a forced tool_choice on an
// upstream that refuses one while thinking.
type ForcedAction uint8

// Forced actions.
const (
	ForcedAuto            ForcedAction = iota // send tool_choice "auto"; the judge still enforces the original (the default)
	ForcedDisableThinking                     // send the request with thinking off
)

var forcedNames = []string{"auto", "disable_thinking"}

func (f ForcedAction) String() string { return forcedNames[f] }

// Names are the configured names of the actions.
func (ForcedAction) Names() []string { return slices.Clone(forcedNames) }

// Parse reads a configured action: auto or disable_thinking.
func (ForcedAction) Parse(s string) (ForcedAction, error) {
	return enum.Parse[ForcedAction](forcedNames, s)
}
