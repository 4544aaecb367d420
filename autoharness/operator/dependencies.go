package operator

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/metaharness/metaharness/autoharness"
)

// Dependency is a record that blocks a delete, as a 409's error object
// lists it under "dependencies".
type Dependency struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Status string `json:"status"`
}

// Dependencies are the records refused names as blocking its delete (the
// raw list, and each decoded), none when it lists none.
func Dependencies(refused *autoharness.Error) ([]json.RawMessage, []Dependency) {
	var shape struct {
		Dependencies []json.RawMessage `json:"dependencies"`
	}
	if json.Unmarshal(refused.Details, &shape) != nil {
		return []json.RawMessage{}, nil
	}
	raw := shape.Dependencies
	if raw == nil {
		raw = []json.RawMessage{}
	}
	deps := make([]Dependency, len(raw))
	for i, r := range raw {
		_ = json.Unmarshal(r, &deps[i]) // a dependency of another shape prints by its kind and id, both then empty
	}
	return raw, deps
}

// Hints are the next steps that clear each dependency blocking the delete
// of repository repoID, one a dependency, in order.
func Hints(repoID string, deps []Dependency) []string {
	host := "<hostId>"
	for _, d := range deps {
		if d.Kind == "host-inventory" {
			host = d.ID
			break
		}
	}
	out := make([]string, 0, len(deps))
	for _, d := range deps {
		var h string
		switch d.Kind {
		case "schedule":
			h = fmt.Sprintf("schedule %s: auto-harness api DELETE /schedules/%s", d.ID, d.ID)
		case "session":
			h = fmt.Sprintf("session %s is still running (status: %s); wait for it, or auto-harness api POST /sessions/%s/cancel", d.ID, d.Status, d.ID)
		case "session-drain":
			h = fmt.Sprintf("session-drain %s (status: %s): auto-harness api POST /repositories/%s/session-drains/%s/release", d.ID, d.Status, repoID, d.ID)
		case "host-inventory":
			h = fmt.Sprintf("host-inventory %s: auto-harness host repo rm %s %s", d.ID, d.ID, repoID)
		case "worktree":
			h = fmt.Sprintf("worktree %s: auto-harness host repo rm %s %s", d.ID, host, repoID)
		case "integration":
			if d.ID == "github-ingress" {
				h = "integration github-ingress: remove this repository's binding from the GitHub ingress configuration"
			} else {
				h = fmt.Sprintf("integration %s: remove or retarget integration %s", d.ID, d.ID)
			}
		default:
			h = d.Kind + " " + d.ID
		}
		out = append(out, h)
	}
	return out
}

// Refusal is err as the control plane's refusal of status, nil when it is
// something else.
func Refusal(err error, status int) *autoharness.Error {
	var e *autoharness.Error
	if errors.As(err, &e) && e.Status == status {
		return e
	}
	return nil
}
