package attest

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

// Row ids as the wire spells them (record.RowHow.Row and friends).
const (
	H1a = "h1a"
	H1b = "h1b"
	H2  = "h2"
	H3  = "h3"
	H4  = "h4"
	H5  = "h5"
	H6  = "h6"
	H7  = "h7"
	H8  = "h8"
	H9  = "h9"
	H10 = "h10"
	H11 = "h11"
	H12 = "h12"
)

// RowSpec is what a row asserts, fixed for every run.
type RowSpec struct {
	ID        string `json:"id" jsonschema:"enum=h1a,enum=h1b,enum=h2,enum=h3,enum=h4,enum=h5,enum=h6,enum=h7,enum=h8,enum=h9,enum=h10,enum=h11,enum=h12"`
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
}

// Row is one evaluated row.
type Row struct {
	RowSpec
	Verdict string `json:"verdict" jsonschema:"enum=ok,enum=gap,enum=unk"`
	Detail  string `json:"detail"`
}

// Gates reports whether the row moves an audited run's exit code.
func (r Row) Gates() bool { return r.Severity == Gating && r.Verdict != OK }

// RowOrder is a row id's place in report order, for sorting attestation
// lists; an unknown id sorts last.
func RowOrder(id string) int {
	for i, r := range Rows {
		if r.ID == id {
			return i
		}
	}
	return len(Rows)
}
