package attest

import "github.com/invopop/jsonschema"

// Verdicts of a row, and of the floor as a whole.
const (
	OK  = "ok"
	Gap = "gap"
	Unk = "unk"
)

// Severities: a gating row that is not ok moves the exit code of an audited
// run; an advisory row is evaluated and printed and never moves it.
const (
	Gating   = "gating"
	Advisory = "advisory"
)

// Assertions: what a row's evidence is. A record row is judged from what the
// vendor recorded; a launch row from what metaharness imposed at launch; an
// effect row from what the run's sidecars saw happen.
const (
	AssertRecord = "record"
	AssertLaunch = "launch"
	AssertEffect = "effect"
)

// Hermetic modes (--hermetic).
const (
	ModeOff    = "off"
	ModeOn     = "on"
	ModeStrict = "strict"
)

// RowSpec is what a row asserts, fixed for every run.
type RowSpec struct {
	ID        RowID  `json:"id"`
	Label     string `json:"label"`
	Assertion string `json:"assertion" jsonschema:"enum=record,enum=launch,enum=effect"`
	Severity  string `json:"severity" jsonschema:"enum=gating,enum=advisory"`
}

// Rows lists every row in report order. The labels are the exact text the
// report prints.
var Rows = []RowSpec{
	{H1a, "config home is scratch — plugins are exactly the declared set", AssertRecord, Gating},
	{H1b, "config home is scratch — the output style is the default", AssertRecord, Gating},
	{H2, "settings sources are excluded", AssertLaunch, Advisory},
	{H3, "the environment is constructed, not inherited", AssertLaunch, Gating},
	{H4, "no API key unless the run declared one", AssertRecord, Gating},
	{H5, "the MCP surface is exactly what the launch gave", AssertRecord, Gating},
	{H6, "credential carriage is exactly declared", AssertEffect, Advisory},
	{H7, "the working directory is ours", AssertRecord, Gating},
	{H8, "hooks and customizations are not skipped", AssertLaunch, Gating},
	{H9, "the vendor version is the pinned one", AssertRecord, Gating},
	{H10, "governing documents cannot move under the run", AssertRecord, Gating},
	{H11, "no memory file outside the copied tree is discoverable", AssertLaunch, Gating},
	{H12, "egress goes nowhere the run did not allow", AssertEffect, Advisory},
	{H13, "the record matches the wire", AssertEffect, Gating},
}

// Row is one evaluated row.
type Row struct {
	RowSpec
	Verdict string `json:"verdict" jsonschema:"enum=ok,enum=gap,enum=unk"`
	Detail  string `json:"detail"`
}

// JSONSchemaExtend lists the rows of the table as the id's values, so that
// a row added to Rows is in the published schema too.
func (Row) JSONSchemaExtend(s *jsonschema.Schema) {
	id, ok := s.Properties.Get("id")
	if !ok {
		return
	}
	id.Enum = nil
	for _, r := range Rows {
		id.Enum = append(id.Enum, r.ID.id)
	}
}

// Gates reports whether the row moves an audited run's exit code.
func (r Row) Gates() bool { return r.Severity == Gating && r.Verdict != OK }

// rowOrder is a row id's place in report order, for sorting attestation
// lists; an unknown id sorts last.
func rowOrder(id string) int {
	for i, r := range Rows {
		if r.ID.id == id {
			return i
		}
	}
	return len(Rows)
}
