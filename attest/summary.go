package attest

import (
	"strings"
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
	// Run is the run's id: its event stream's, and the name of its
	// directory under --records-dir.
	Run      string `json:"run"`
	Kind     string `json:"kind"`
	ExitCode int    `json:"exit_code"`
	// Outcome names how the run ended (Outcomes): one name per exit code,
	// for exit 3 which of the ways nobody found out, and for exit 2 whether
	// a limit of the host's refused it.
	Outcome string `json:"outcome" jsonschema:"enum=ok,enum=gap,enum=refused,enum=unknown,enum=stopped,enum=halted,enum=upstream_unreachable,enum=upstream_refused,enum=key_rejected,enum=quota,enum=host_limit"`
	// Retry is what the outcome means for a scheduler's retry (Outcomes).
	Retry string `json:"retry" jsonschema:"enum=none,enum=no,enum=after_fix,enum=yes,enum=after_cooldown"`
	// Reason is the line that says why, as printed: the refusal, the line
	// of an exit 3, or the usage-limit line; null when the exit code says
	// it all.
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

// Outcome is how a run ended, as a scheduler reads it: its exit code, a
// name, and what it means for a retry.
type Outcome struct {
	Code exit.Code
	// Name is the summary's outcome; its line on stderr (for exit 3) is
	// named the same, with - for _.
	Name  string
	Retry string
}

// The outcomes. Each exit code has one, but for 3, nobody found out, which
// has one for each way a run gets there: the session's end was not
// vouched for (unknown); a signal stopped it, as a fleet's cancel or
// timeout does (stopped); the embedder's own halt or interrupt ended it
// (halted); or the model API never served it (upstream_unreachable,
// upstream_refused, key_rejected, each at the loopback proxy's first sight
// of it).
var (
	OutcomeOK      = Outcome{exit.OK, "ok", "none"}
	OutcomeGap     = Outcome{exit.Gap, "gap", "no"}
	OutcomeRefused = Outcome{exit.Refused, "refused", "after_fix"}
	OutcomeUnknown = Outcome{exit.Unknown, "unknown", "yes"}
	OutcomeStopped = Outcome{exit.Unknown, "stopped", "yes"}
	OutcomeHalted  = Outcome{exit.Unknown, "halted", "no"}
	// An upstream nobody reached may be back soon; one that refuses the
	// request or the key answers the same until someone fixes the
	// endpoint or the key.
	OutcomeUnreachable     = Outcome{exit.Unknown, "upstream_unreachable", "yes"}
	OutcomeUpstreamRefused = Outcome{exit.Unknown, "upstream_refused", "after_fix"}
	OutcomeKeyRejected     = Outcome{exit.Unknown, "key_rejected", "after_fix"}
	OutcomeQuota           = Outcome{exit.Quota, "quota", "after_cooldown"}
	// A limit of the host's or the user's (processes, namespaces, open
	// files) refused the run: it may pass once other runs end.
	OutcomeHostLimit = Outcome{exit.Refused, "host_limit", "yes"}
)

// Outcomes are every outcome, the first of each code its default.
var Outcomes = []Outcome{OutcomeOK, OutcomeGap, OutcomeRefused, OutcomeUnknown, OutcomeStopped, OutcomeHalted,
	OutcomeUnreachable, OutcomeUpstreamRefused, OutcomeKeyRejected, OutcomeQuota, OutcomeHostLimit}

// OutcomeOf is code's default outcome.
func OutcomeOf(code exit.Code) Outcome {
	for _, o := range Outcomes {
		if o.Code == code {
			return o
		}
	}
	return OutcomeUnknown
}

// LineName is the outcome's name as a stderr line names it.
func (o Outcome) LineName() string { return strings.ReplaceAll(o.Name, "_", "-") }

// NewSummary is the summary of a run that ended with outcome o.
func NewSummary(kind string, o Outcome) Summary {
	return Summary{Format: SummaryFormat, Kind: kind, ExitCode: int(o.Code), Outcome: o.Name, Retry: o.Retry, Records: []RecordFile{}}
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
