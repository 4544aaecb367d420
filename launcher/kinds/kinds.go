// Package kinds is the table of kinds: the one place that names every
// launcher/<kind> package. The verbs (run, capabilities, doctor,
// conformance, project) look a kind up here and go through its descriptor
// and the launcher interfaces it implements, so adding a kind is one folder
// and one row below.
//
// The table is a slice rather than a map so that it has an order: help,
// enums and messages list the kinds as the table does (claude, codex,
// b10x). It is a plain value, built without init side effects.
package kinds

import (
	"slices"
	"strings"

	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/launcher/codex"
)

// table lists every kind, one row each.
var table = []launcher.Kind{
	claude.Kind{},
	codex.Kind{},
	b10x.Kind{},
}

// Lookup returns the kind named name.
func Lookup(name string) (launcher.Kind, bool) {
	for _, k := range table {
		if k.Descriptor().Name == name {
			return k, true
		}
	}
	return nil, false
}

// All lists the kinds in table order.
func All() []launcher.Kind { return slices.Clone(table) }

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
func ByRecordFormat(format string) (launcher.Replayer, bool) {
	for _, k := range table {
		if r, ok := k.(launcher.Replayer); ok && format != "" && k.Descriptor().RecordFormat == format {
			return r, true
		}
	}
	return nil, false
}

// RecordFormats lists the raw record formats project --from reads.
func RecordFormats() []string {
	var out []string
	for _, k := range table {
		if _, ok := k.(launcher.Replayer); ok && k.Descriptor().RecordFormat != "" {
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
