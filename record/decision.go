package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decision values, the tag of the internally tagged decision object.
const (
	Allow   = "allow"
	Deny    = "deny"
	Replace = "replace"
	Abstain = "abstain"
)

// Decision is {"decision":"allow"}, {"decision":"deny","reason":…},
// {"decision":"replace","input":…} or {"decision":"abstain"}. Only the keys
// of the chosen variant are written.
type Decision struct {
	Decision string          `json:"decision" jsonschema:"enum=allow,enum=deny,enum=replace,enum=abstain"`
	Reason   string          `json:"reason,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
}

// AllowDecision, DenyDecision, ReplaceDecision and AbstainDecision build the
// four variants.
func AllowDecision() Decision                     { return Decision{Decision: Allow} }
func DenyDecision(reason string) Decision         { return Decision{Decision: Deny, Reason: reason} }
func AbstainDecision() Decision                   { return Decision{Decision: Abstain} }
func ReplaceDecision(in json.RawMessage) Decision { return Decision{Decision: Replace, Input: in} }

// Validate enforces the variant rules: a deny carries a non-blank reason, a
// replace carries an input, and neither key appears on another variant.
func (d Decision) Validate() error {
	switch d.Decision {
	case Allow, Abstain:
		if d.Reason != "" || d.Input != nil {
			return fmt.Errorf("decision %q takes no reason and no input", d.Decision)
		}
	case Deny:
		if strings.TrimSpace(d.Reason) == "" {
			return errors.New("a deny needs a non-blank reason: the model is told it")
		}
		if d.Input != nil {
			return errors.New("a deny takes no input")
		}
	case Replace:
		if len(d.Input) == 0 || string(d.Input) == "null" {
			return errors.New("a replace needs the input to run the call with")
		}
		if d.Reason != "" {
			return errors.New("a replace takes no reason")
		}
	case "":
		return errors.New(`the decision object has no "decision" tag (allow, deny, replace or abstain)`)
	default:
		return fmt.Errorf("unknown decision %q: want allow, deny, replace or abstain", d.Decision)
	}
	return nil
}

// CommandOutcome is {"result":"ok","applies_at":…} or
// {"result":"refused","refused":{"code":…,"reason":…}}.
type CommandOutcome struct {
	Result    string          `json:"result" jsonschema:"enum=ok,enum=refused"`
	AppliesAt *string         `json:"applies_at,omitempty" jsonschema:"nullable"`
	Refused   *CommandRefusal `json:"refused,omitempty"`
}

// MarshalJSON writes applies_at as an explicit null on ok and leaves it out
// on refused, so each variant carries exactly its own keys.
func (o CommandOutcome) MarshalJSON() ([]byte, error) {
	if o.Result == "ok" {
		return marshal(struct {
			Result    string  `json:"result"`
			AppliesAt *string `json:"applies_at"`
		}{o.Result, o.AppliesAt})
	}
	type plain CommandOutcome
	return marshal(plain(o))
}

// CommandRefusal names the refusal code and the reason.
type CommandRefusal struct {
	Code   string `json:"code" jsonschema:"enum=UNSUPPORTED_CONTROL,enum=UNKNOWN_CALL,enum=TOO_LATE,enum=MALFORMED,enum=SHADOWED"`
	Reason string `json:"reason"`
}

// The five command refusal codes (reference notes §3.1).
const (
	UnsupportedControl = "UNSUPPORTED_CONTROL"
	UnknownCall        = "UNKNOWN_CALL"
	TooLate            = "TOO_LATE"
	Malformed          = "MALFORMED"
	Shadowed           = "SHADOWED"
)

// OK builds an ok outcome; appliesAt may be nil.
func OK(appliesAt *string) CommandOutcome { return CommandOutcome{Result: "ok", AppliesAt: appliesAt} }

// Refuse builds a refused outcome.
func Refuse(code, reason string) CommandOutcome {
	return CommandOutcome{Result: "refused", Refused: &CommandRefusal{Code: code, Reason: reason}}
}
