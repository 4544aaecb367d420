package operator

import (
	"context"

	"github.com/metaharness/metaharness/autoharness"
)

// Target is the target a --provider (or, with command, a --command) value
// names: its id when the catalogue has an entry of that id, otherwise the
// value as a name, which CreateSession resolves, so that a value that is
// neither fails with the client's own UNKNOWN_/AMBIGUOUS_ codes.
func Target(ctx context.Context, c *autoharness.Client, command bool, value string) (*autoharness.TargetRef, error) {
	list := c.ListProviders
	if command {
		list = c.ListCommands
	}
	entries, err := list(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.ID != value {
			continue
		}
		if command {
			return &autoharness.TargetRef{CommandID: value}, nil
		}
		return &autoharness.TargetRef{ProviderID: value}, nil
	}
	if command {
		return &autoharness.TargetRef{CommandName: value}, nil
	}
	return &autoharness.TargetRef{ProviderName: value}, nil
}
