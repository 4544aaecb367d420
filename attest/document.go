package attest

import (
	"github.com/metaharness/metaharness/record"
)

// DocumentFormat tags the attestation document.
const DocumentFormat = "metaharness.attestation/1"

// Document is one run's attestation as a file (run --attestation FILE): the
// claim the launch made, every row the floor judged, and the verdicts the
// report's closing lines state, so that a fleet can collect them per
// session without parsing stderr.
type Document struct {
	Format  string `json:"format" jsonschema:"const=metaharness.attestation/1"`
	Run     string `json:"run"`
	Kind    string `json:"kind"`
	Mode    string `json:"mode" jsonschema:"enum=off,enum=on,enum=strict"`
	Audited bool   `json:"audited"`
	// Attestation is session.started.hermetic as recorded: metaharness's
	// own claim, not evidence. Null when the stream carried none.
	Attestation *record.Attestation `json:"attestation" jsonschema:"nullable"`
	Rows        []Row               `json:"rows"`
	Census      record.Census       `json:"census"`
	// CensusSource is "terminal record" or "tool.decided events".
	CensusSource string `json:"census_source"`
	// Withheld is null when the harness did not say, [] when it said none.
	Withheld []record.Withheld `json:"withheld" jsonschema:"nullable"`
	Stream   StreamState       `json:"stream"`
	Terminal string            `json:"terminal" jsonschema:"enum=none,enum=ok,enum=error"`
	// Auditor is what the external auditor said; null when none ran.
	Auditor        *AuditorResult `json:"auditor" jsonschema:"nullable"`
	ChildExit      string         `json:"child_exit"`
	ControlVerdict string         `json:"control_verdict" jsonschema:"enum=ok,enum=gap,enum=unk"`
	ExitCode       int            `json:"exit_code"`
	// Loopback is the loopback proxy's record of the run; null when the run
	// had no proxy.
	Loopback *Loopback `json:"loopback" jsonschema:"nullable"`
	// UpstreamQuota is the loopback request whose answer said the account
	// is out of quota or rate-limited (its record, quota set): the run was
	// stopped there and exits 4. Null when no answer was.
	UpstreamQuota *record.ProxyRecord `json:"upstream_quota" jsonschema:"nullable"`
	// StreamFailures names each destination of the event stream that
	// stopped taking it (stdout, the --events file), the line it stopped at
	// and why; empty when every one held. A failure makes the run exit 2.
	StreamFailures []record.SinkFailure `json:"stream_failures"`
	// Telemetry is what the run's OpenTelemetry export delivered by the
	// time its stream closed; null without an export.
	Telemetry *record.Telemetry `json:"telemetry,omitempty" jsonschema:"nullable"`
}

// Loopback is what the loopback proxy recorded: every request (the most
// recent 4096; Counters.RecordsDropped counts the rest), each with its
// method, path, status, bytes, duration and any refusal or upstream error,
// and the counters over all of them. Never a body, a token or the
// placeholder.
type Loopback struct {
	Counters record.ProxyCounters `json:"counters"`
	Requests []record.ProxyRecord `json:"requests"`
}

// StreamState is the completeness verdict on the stream.
type StreamState struct {
	State  string `json:"state" jsonschema:"enum=complete,enum=inconsistent,enum=truncated"`
	Events uint64 `json:"events"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Document builds the attestation document; the arguments are Conclude's.
func (e *Evaluation) Document(kind string, audited bool, aud *AuditorResult, child *record.Process) Document {
	if child == nil {
		child = e.Process
	}
	d := Document{
		Format: DocumentFormat, Run: e.RunID, Kind: kind, Mode: e.Mode, Audited: audited,
		Attestation: e.Attestation, Rows: e.Rows, Census: e.Census, CensusSource: e.CensusSource,
		Stream:   StreamState{State: e.Stream.State, Events: e.Stream.Events, Reason: e.Stream.Reason, Detail: e.Stream.Detail},
		Terminal: e.Terminal, Auditor: aud, ChildExit: ChildExit(child),
		ControlVerdict: e.Control(), ExitCode: int(e.Exit(audited, aud)),
	}
	if e.WithheldStated {
		d.Withheld = append([]record.Withheld{}, e.Withheld...)
	}
	d.StreamFailures = []record.SinkFailure{}
	return d
}

// DocumentSchema is the JSON Schema of the attestation document, checked in
// as schemas/attestation.schema.json.
func DocumentSchema() ([]byte, error) {
	return record.MarshalSchema(record.ReflectDocument(&Document{}, "attestation.schema.json",
		"One run's attestation: the launch's claim, the floor's rows and the verdicts."))
}
