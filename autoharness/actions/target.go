package actions

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/internal/jsonscan"
)

// TargetSpecKeys are the keys of a target, in the order a route shows
// them: exactly one of them names what runs a session.
var TargetSpecKeys = [...]string{"providerId", "providerName", "commandId", "commandName"}

// ParseHarnessTarget reads a target: a JSON object with exactly one of
// TargetSpecKeys, its value a non-empty string. field names the value in a
// refusal ("" is HARNESS_TARGET).
func ParseHarnessTarget(value, field string) (autoharness.TargetRef, error) {
	field = orDefault(field, "HARNESS_TARGET")
	if !json.Valid([]byte(value)) {
		return autoharness.TargetRef{}, refuse(CodeInvalidTarget, field+" must be valid JSON")
	}
	return target([]byte(value), field)
}

// ParseHarnessFallbacks reads a JSON array of targets; an empty (or blank)
// value is none. A refusal of the array is INVALID_FALLBACKS, of one of
// its targets INVALID_TARGET naming it as <field>[i]. field "" is
// HARNESS_FALLBACKS.
func ParseHarnessFallbacks(value, field string) ([]autoharness.TargetRef, error) {
	field = orDefault(field, "HARNESS_FALLBACKS")
	refs := []autoharness.TargetRef{}
	if trim(value) == "" {
		return refs, nil
	}
	if !json.Valid([]byte(value)) {
		return nil, refuse(CodeInvalidFallbacks, field+" must be valid JSON")
	}
	var items []json.RawMessage
	if json.Unmarshal([]byte(value), &items) != nil || items == nil {
		return nil, refuse(CodeInvalidFallbacks, field+" must be a JSON array")
	}
	for i, item := range items {
		ref, err := target(item, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// target reads one target from data, valid JSON.
func target(data []byte, field string) (autoharness.TargetRef, error) {
	var keys []string
	values := map[string][]byte{}
	var twice string
	if jsonscan.Members(data, func(key, val []byte) {
		k := string(key)
		if _, ok := values[k]; ok && twice == "" {
			twice = k
		}
		keys = append(keys, k)
		values[k] = append([]byte(nil), val...)
	}) != nil {
		return autoharness.TargetRef{}, refuse(CodeInvalidTarget, field+" must be a JSON object")
	}
	if twice != "" {
		return autoharness.TargetRef{}, refuse(CodeInvalidTarget, fmt.Sprintf("%s gives the key %s twice; give each key once", field, jsString(twice)))
	}
	var key string
	n := 0
	for _, k := range keys {
		if !slices.Contains(TargetSpecKeys[:], k) {
			return autoharness.TargetRef{}, refuse(CodeInvalidTarget, field+" must only contain providerId, providerName, commandId, or commandName")
		}
		key = k
		n++
	}
	if n != 1 {
		return autoharness.TargetRef{}, refuse(CodeInvalidTarget, field+" must be exactly one of providerId, providerName, commandId, or commandName")
	}
	var s string
	if raw := values[key]; raw[0] != '"' || json.Unmarshal(raw, &s) != nil || s == "" {
		return autoharness.TargetRef{}, refuse(CodeInvalidTarget, field+"."+key+" must be a non-empty string")
	}
	var ref autoharness.TargetRef
	*map[string]*string{
		"providerId": &ref.ProviderID, "providerName": &ref.ProviderName,
		"commandId": &ref.CommandID, "commandName": &ref.CommandName,
	}[key] = s
	return ref, nil
}

// The operations of the dispatch Action: one that creates a session, and
// four that manage the principal's session drain of a repository.
const (
	OperationDispatch     = "dispatch"
	OperationStartDrain   = "start-drain"
	OperationGetDrain     = "get-drain"
	OperationWaitForDrain = "wait-for-drain"
	OperationReleaseDrain = "release-drain"
)

// IsHarnessDrainOperation reports whether op is one of the four drain
// operations.
func IsHarnessDrainOperation(op string) bool {
	switch op {
	case OperationStartDrain, OperationGetDrain, OperationWaitForDrain, OperationReleaseDrain:
		return true
	}
	return false
}
