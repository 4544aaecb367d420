package main

import (
	"regexp"
	"testing"

	"github.com/metaharness/metaharness/autoharness/actions"
)

// TestDispatchHelpListsEveryInput: `auto-harness dispatch --help` names
// the variable of every input of the Action, each on a line of its own.
func TestDispatchHelpListsEveryInput(t *testing.T) {
	for _, in := range actions.Inputs {
		if !regexp.MustCompile(`(?m)^  ` + in.Env + ` `).MatchString(dispatchUsage) {
			t.Errorf("dispatch --help does not list %s (input %s)", in.Env, in.Name)
		}
	}
}
