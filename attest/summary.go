package attest

import (
	"unicode/utf8"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// SummaryFormat tags the run summary.
const SummaryFormat = "metaharness.run-summary/1"

// MaxSummaryAnswer bounds the final answer a summary carries, so that the
// whole document stays well inside the 256 KiB a fleet's session-output
// file allows (Auto Harness's HARNESS_OUTPUT_FILE).
const MaxSummaryAnswer = 64 << 10

// Summary is one run in a few hundred bytes, for a scheduler that files a
// session's result without reading its records: how it ended and what that
// means for a retry, the final answer, the verdicts, what the vendor
// reported spending, and where the full records are.
type Summary struct {
	Format string `json:"format" jsonschema:"const=metaharness.run-summary/1"`
	// Run is the event stream's run id; "" when the run was refused before
	// its stream opened.
	Run      string `json:"run"`
	Kind     string `json:"kind"`
	ExitCode int    `json:"exit_code"`
	// Outcome names the exit code (Outcomes).
	Outcome string `json:"outcome" jsonschema:"enum=ok,enum=gap,enum=refused,enum=unknown,enum=quota"`
	// Retry is what the exit code means for a scheduler's retry (Outcomes).
	Retry string `json:"retry" jsonschema:"enum=none,enum=no,enum=after_fix,enum=yes,enum=after_cooldown"`
	// Reason is the line that says why, as printed: the refusal, or the
	// usage-limit line; null when the exit code says it all.
	Reason *string `json:"reason" jsonschema:"nullable"`
	// FinalAnswer is the vendor's final answer, its first MaxSummaryAnswer
	// bytes (FinalAnswerTruncated then says so); null when there was none.
	FinalAnswer          *string `json:"final_answer" jsonschema:"nullable"`
	FinalAnswerTruncated bool    `json:"final_answer_truncated"`
	// ChildExit, ControlVerdict and Audited are the attestation's; empty
	// when the run ended before its child was spawned.
	ChildExit      string `json:"child_exit"`
	ControlVerdict string `json:"control_verdict"`
	Audited        bool   `json:"audited"`
	// Census is the decision census; null when no session ran.
	Census *record.Census `json:"census" jsonschema:"nullable"`
	// UpstreamQuota is the model API's quota answer that stopped the run;
	// null when there was none.
	UpstreamQuota *record.Quota `json:"upstream_quota" jsonschema:"nullable"`
	// Usage, TotalCostUSD and NumTurns are the vendor's own accounting from
	// its terminal record, never computed; null when it gave none.
	Usage        *record.Usage `json:"usage" jsonschema:"nullable"`
	TotalCostUSD *float64      `json:"total_cost_usd" jsonschema:"nullable"`
	NumTurns     *uint64       `json:"num_turns" jsonschema:"nullable"`
	// Records are the files the run wrote its records to.
	Records []RecordFile `json:"records"`
	// TraceID is the run's OpenTelemetry trace id; absent without an
	// export.
	TraceID string `json:"trace_id,omitempty"`
}

// RecordFile is one file a run wrote its records to.
type RecordFile struct {
	// What is "events", "attestation" or "statement".
	What string `json:"what" jsonschema:"enum=events,enum=attestation,enum=statement"`
	Path string `json:"path"`
	// SHA256 is the hex digest of the file as written; "" for the event
	// stream, which the summary does not re-read.
	SHA256 string `json:"sha256,omitempty"`
}

// Outcome is what one exit code means to a scheduler.
type Outcome struct {
	Name  string
	Retry string
}

// Outcomes name each exit code for a scheduler: 0 is done; 1 found a gap
// in the controls, which the same session would find again; 2 is a refusal
// or an I/O failure, which the line names the fix for; 3 is a session that
// nobody could vouch for (it failed, was stopped, or its child died), worth
// another attempt; 4 is the model API refusing the account, worth another
// attempt after a cooldown or on another account.
var Outcomes = map[exit.Code]Outcome{
	exit.OK:      {"ok", "none"},
	exit.Gap:     {"gap", "no"},
	exit.Refused: {"refused", "after_fix"},
	exit.Unknown: {"unknown", "yes"},
	exit.Quota:   {"quota", "after_cooldown"},
}

// NewSummary is the summary of a run that exited with code, naming the
// outcome.
func NewSummary(kind string, code exit.Code) Summary {
	o := Outcomes[code]
	return Summary{Format: SummaryFormat, Kind: kind, ExitCode: int(code), Outcome: o.Name, Retry: o.Retry, Records: []RecordFile{}}
}

// SetAnswer puts the final answer in, cut to MaxSummaryAnswer bytes on a
// character boundary.
func (s *Summary) SetAnswer(text string) {
	if len(text) > MaxSummaryAnswer {
		cut := MaxSummaryAnswer
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, s.FinalAnswerTruncated = text[:cut], true
	}
	s.FinalAnswer = &text
}

// SummarySchema is the JSON Schema of the run summary, checked in as
// schemas/run-summary.schema.json.
func SummarySchema() ([]byte, error) {
	return record.MarshalSchema(record.ReflectDocument(&Summary{}, "run-summary.schema.json",
		"One run in brief, for a scheduler: its exit code and what that means for a retry, the final answer, the verdicts and where the records are."))
}
