package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/record"
)

// The in-toto and DSSE names a statement is written under.
const (
	// StatementType is the in-toto Statement layer, version 1.
	StatementType = "https://in-toto.io/Statement/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// PredicateType names this predicate; SchemaFile is its JSON Schema.
	PredicateType = "https://metaharness.dev/run-statement/v1"
	SchemaFile    = "run-statement.schema.json"
)

// Statement is an in-toto Statement v1 about one run.
type Statement struct {
	Type          string    `json:"_type" jsonschema:"const=https://in-toto.io/Statement/v1"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType" jsonschema:"const=https://metaharness.dev/run-statement/v1"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is one file the run produced or read, as an in-toto resource
// descriptor: Name is the file's absolute path when the run left it on
// disk, else a name of the form "<where>:<what>" (stdout:events,
// scratch:transcript.jsonl) for bytes the run digested and kept no file of.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
	// Annotations say what the subject is to the run (Role) and whether a
	// file of it was kept.
	Annotations Annotations `json:"annotations"`
}

// Annotations are a subject's place in the run.
type Annotations struct {
	Role Role `json:"role" jsonschema:"enum=events,enum=attestation,enum=transcript,enum=frame,enum=catalogue,enum=catalogue-copy,enum=context"`
	// Kept: the subject is a file at Name after the run; false for bytes
	// that went to stdout or stayed in the scratch tree the run removed.
	Kept bool `json:"kept"`
}

// Role is what a subject is to the run.
type Role string

const (
	RoleEvents        Role = "events"
	RoleAttestation   Role = "attestation"
	RoleTranscript    Role = "transcript"
	RoleFrame         Role = "frame"
	RoleCatalogue     Role = "catalogue"
	RoleCatalogueCopy Role = "catalogue-copy"
	RoleContext       Role = "context"
)

// Predicate is what the statement says of the run: how it ended, and the
// attestation's verdicts and rows.
type Predicate struct {
	// Run is the event stream's run id.
	Run  string `json:"run"`
	Kind string `json:"kind"`
	// Metaharness is the version of the build that ran it.
	Metaharness string `json:"metaharness"`
	// FinishedAt is when the statement was made, RFC 3339 in UTC.
	FinishedAt string `json:"finished_at"`
	ExitCode   int    `json:"exit_code"`
	// Reason is the line that says why, as printed (the refusal, the
	// usage-limit line); null when the exit code says it all.
	Reason *string `json:"reason" jsonschema:"nullable"`
	// TraceID is the run's OpenTelemetry trace id; absent without export.
	TraceID string `json:"trace_id,omitempty"`
	// Attestation is the attestation's verdicts and rows; null when the
	// run ended before it had one (a refusal before the spawn).
	Attestation *Verdicts `json:"attestation" jsonschema:"nullable"`
	// Signing names the key the envelope is signed with; null when it is
	// unsigned (the run was given no --sign-key).
	Signing *Signing `json:"signing" jsonschema:"nullable"`
}

// Verdicts are the attestation document's verdicts and rows.
type Verdicts struct {
	Mode           string                `json:"mode"`
	Audited        bool                  `json:"audited"`
	ChildExit      string                `json:"child_exit"`
	ControlVerdict string                `json:"control_verdict" jsonschema:"enum=ok,enum=gap,enum=unk"`
	Terminal       string                `json:"terminal"`
	Stream         attest.StreamState    `json:"stream"`
	Rows           []attest.Row          `json:"rows"`
	Census         record.Census         `json:"census"`
	Auditor        *attest.AuditorResult `json:"auditor" jsonschema:"nullable"`
}

// VerdictsOf takes the verdicts and rows out of an attestation document.
func VerdictsOf(d *attest.Document) *Verdicts {
	return &Verdicts{Mode: d.Mode, Audited: d.Audited, ChildExit: d.ChildExit, ControlVerdict: d.ControlVerdict,
		Terminal: d.Terminal, Stream: d.Stream, Rows: d.Rows, Census: d.Census, Auditor: d.Auditor}
}

// Signing is the key an envelope is signed with, in securesystemslib's
// words: its scheme and key id.
type Signing struct {
	Scheme string `json:"scheme" jsonschema:"enum=ed25519,enum=ecdsa-sha2-nistp256"`
	KeyID  string `json:"keyid"`
}

// maxSubject bounds a file digested as a subject; an event stream of a
// long run is the largest.
const maxSubject = 4 << 30

// FileSubject is the subject of the file at path, digested as it is now.
func FileSubject(role Role, path string) (Subject, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Subject{}, err
	}
	sum, err := inputfile.Digest(abs, maxSubject)
	if err != nil {
		return Subject{}, err
	}
	return Subject{Name: abs, Digest: map[string]string{"sha256": sum}, Annotations: Annotations{Role: role, Kept: true}}, nil
}

// UnkeptSubject is the subject of bytes the run kept no file of, by their
// hex sha256 digest; name says where they went ("stdout:events").
func UnkeptSubject(role Role, name, sha256Hex string) Subject {
	return Subject{Name: name, Digest: map[string]string{"sha256": sha256Hex}, Annotations: Annotations{Role: role}}
}

// DigestOf is the hex sha256 of b.
func DigestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// kept reports whether s names a file to check.
func (s Subject) kept() bool { return s.Annotations.Kept && strings.HasPrefix(s.Name, "/") }

// Schema is the JSON Schema of the statement, checked in as
// schemas/run-statement.schema.json.
func Schema() ([]byte, error) {
	return record.MarshalSchema(record.ReflectDocument(&Statement{}, SchemaFile,
		"One run's in-toto Statement v1 (the DSSE payload of run --statement): the digests of what it produced and read, and its verdicts."))
}
