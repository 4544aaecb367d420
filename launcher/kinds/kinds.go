// Package kinds is the table of kinds: the one place that names every
// launcher/<kind> package. The verbs (run, capabilities, doctor,
// conformance, project) look a kind up here and go through its descriptor
// and the launcher/kind interfaces it implements, so adding a kind is one
// folder and one row below.
//
// The table is a slice rather than a map so that it has an order: help,
// enums and messages list the kinds as the table does (claude, codex,
// gemini, b10x). It is a plain value, built without init side effects.
package kinds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/launcher/codex"
	"github.com/metaharness/metaharness/launcher/gemini"
	"github.com/metaharness/metaharness/launcher/kind"
)

// table lists every kind, one row each.
var table = []kind.Kind{
	claude.Kind{},
	codex.Kind{},
	gemini.Kind{},
	b10x.Kind{},
}

// Lookup returns the kind named name.
func Lookup(name string) (kind.Kind, bool) {
	for _, k := range table {
		if k.Descriptor().Name == name {
			return k, true
		}
	}
	return nil, false
}

// All lists the kinds in table order.
func All() []kind.Kind { return slices.Clone(table) }

// Names lists the kinds' names in table order.
func Names() []string {
	out := make([]string, len(table))
	for i, k := range table {
		out[i] = k.Descriptor().Name
	}
	return out
}

// ByRecordFormat returns the kind whose raw record is format (project
// --from), and whether one is.
func ByRecordFormat(format string) (kind.Replayer, bool) {
	for _, k := range table {
		if r, ok := k.(kind.Replayer); ok && format != "" && k.Descriptor().RecordFormat == format {
			return r, true
		}
	}
	return nil, false
}

// RecordFormats lists the raw record formats project --from reads.
func RecordFormats() []string {
	var out []string
	for _, k := range table {
		if _, ok := k.(kind.Replayer); ok && k.Descriptor().RecordFormat != "" {
			out = append(out, k.Descriptor().RecordFormat)
		}
	}
	return out
}

// Spelled joins names as help text does: "a, b or c".
func Spelled(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Flags are every kind's own run flags, for the CLI's `run`: one field per
// kind that has any, embedded with its flags grouped under that kind.
type Flags struct {
	B10x b10x.Flags `embed:"" group:"b10x only (refused on claude, codex and gemini)"`
}

// Given is what the spec carries of f (kind.Spec.KindFlags): the only
// kind with flags of its own is b10x.
func (f *Flags) Given() kind.KindFlags { return &f.B10x }

// FlagsOf is what a spec carries of each kind's flags, as the CLI's Flags.
func FlagsOf(s *kind.Spec) Flags {
	var f Flags
	if b, ok := s.KindFlags.(*b10x.Flags); ok && b != nil {
		f.B10x = *b
	}
	return f
}

// Spec is a kind.Spec as a C1 vector spells it: each kind's own flags
// under the kind's name beside the kind-neutral fields, an empty object
// when none was given.
type Spec struct{ kind.Spec }

// MarshalJSON writes the kind-neutral fields, then each flags kind's own.
func (s Spec) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(s.Spec)
	if err != nil {
		return nil, err
	}
	for _, k := range table {
		fk, ok := k.(kind.FlagsKind)
		if !ok {
			continue
		}
		flags := s.KindFlags
		if flags == nil || flags.Kind() != k.Descriptor().Name {
			flags = fk.NewFlags()
		}
		f, err := json.Marshal(flags)
		if err != nil {
			return nil, err
		}
		key, _ := json.Marshal(k.Descriptor().Name)
		b = append(append(append(append(b[:len(b)-1], ','), key...), ':'), f...)
		b = append(b, '}')
	}
	return b, nil
}

// UnmarshalJSON reads the kind-neutral fields and the flags of at most one
// kind, refusing any key neither knows.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	var given kind.KindFlags
	for _, k := range table {
		fk, ok := k.(kind.FlagsKind)
		raw, present := fields[k.Descriptor().Name]
		if !ok || !present {
			continue
		}
		delete(fields, k.Descriptor().Name)
		flags := fk.NewFlags()
		if err := strictUnmarshal(raw, flags); err != nil {
			return fmt.Errorf("the %s flags: %w", k.Descriptor().Name, err)
		}
		empty, _ := json.Marshal(fk.NewFlags())
		if now, _ := json.Marshal(flags); string(now) == string(empty) {
			continue
		}
		if given != nil {
			return fmt.Errorf("flags of two kinds, %s and %s", given.Kind(), flags.Kind())
		}
		given = flags
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	if err := strictUnmarshal(rest, &s.Spec); err != nil {
		return err
	}
	s.KindFlags = given
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
