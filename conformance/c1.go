package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
)

// C1Vector pins one launch plan: a spec and an observed world in, the plan
// (or the refusal) out. Nothing is spawned: planning is pure.
type C1Vector struct {
	ID     string `json:"id"`
	Proves string `json:"proves"`
	// Covers names the run flags whose effect on the plan this vector
	// shows: without the flag's value the plan (or refusal) differs. The
	// CLI's anti-drift test holds every flag of every kind to a vector or
	// a testscript, and each claim here to that difference.
	Covers  []string        `json:"covers,omitempty"`
	Spec    kinds.Spec      `json:"spec"`
	World   json.RawMessage `json:"world"`
	Plan    *kind.Plan      `json:"plan,omitempty"`
	Refusal *C1Refusal      `json:"refusal,omitempty"`
}

// C1Refusal is the refusal a vector expects instead of a plan.
type C1Refusal struct {
	Name    exit.Name `json:"name"`
	Message string    `json:"message"`
}

// PlanC1 computes what the vector's spec and world plan to today.
func PlanC1(v *C1Vector) (*kind.Plan, *C1Refusal, error) {
	k, _ := kinds.Lookup(v.Spec.Kind)
	runner, ok := k.(kind.Runner)
	if !ok {
		return nil, nil, fmt.Errorf("%s: no C1 planner for kind %q", v.ID, v.Spec.Kind)
	}
	var w kind.World
	if err := json.Unmarshal(v.World, &w); err != nil {
		return nil, nil, fmt.Errorf("%s: world: %w", v.ID, err)
	}
	p, err := runner.Plan(&v.Spec.Spec, &w)
	var r *exit.Refusal
	if errors.As(err, &r) {
		return nil, &C1Refusal{Name: r.Name, Message: r.Message}, nil
	}
	return p, nil, err
}

// LoadC1 reads one vector file.
func LoadC1(path string) (*C1Vector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseC1(path, b)
}

// ParseC1 reads one vector; name says where it came from, in errors.
func ParseC1(name string, b []byte) (*C1Vector, error) {
	var v C1Vector
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &v, nil
}

// CheckC1 reports whether the vector's expectation still holds.
func CheckC1(v *C1Vector) error {
	plan, refusal, err := PlanC1(v)
	if err != nil {
		return err
	}
	got, _ := json.Marshal(struct {
		P *kind.Plan
		R *C1Refusal
	}{plan, refusal})
	want, _ := json.Marshal(struct {
		P *kind.Plan
		R *C1Refusal
	}{v.Plan, v.Refusal})
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: the plan moved:\nwant %s\n got %s", v.ID, want, got)
	}
	return nil
}
