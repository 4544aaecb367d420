package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/record"
)

// A fleet's host daemon may hand each session attempt places of its own
// for the results, as Auto Harness's session outputs do. A Command's argv is
// fixed, so it cannot name per-session files itself: these are how a fleet
// collects a session's records.
const (
	// EnvSummaryFile names the file the run summary is written to (one
	// JSON document, attest.Summary).
	EnvSummaryFile = "HARNESS_OUTPUT_FILE"
	// EnvArtifactsDir names the directory the event stream and the
	// attestation are written into, as ArtifactEvents and
	// ArtifactAttestation, beside whatever else the session leaves there.
	EnvArtifactsDir = "HARNESS_ARTIFACTS_DIR"

	ArtifactEvents      = "metaharness-events.jsonl"
	ArtifactAttestation = "metaharness-attestation.json"
)

// recordFile is one file the run writes a record to: the flag or variable
// that named it (for messages) and its path.
type recordFile struct{ from, path string }

// eventFiles are the files the event stream is written to.
func (s *Spec) eventFiles() []recordFile {
	return s.recordFiles("--events", s.Events, ArtifactEvents)
}

// attestationFiles are the files the attestation is written to.
func (s *Spec) attestationFiles() []recordFile {
	return s.recordFiles("--attestation", s.AttestationFile, ArtifactAttestation)
}

// recordFiles are the files one record is written to: the one flag names
// (path, when given) and its artifact in the fleet's directory.
func (s *Spec) recordFiles(flag, path, artifact string) []recordFile {
	var out []recordFile
	if path != "" {
		out = append(out, recordFile{flag, path})
	}
	if s.ArtifactsDir != "" {
		out = append(out, recordFile{"$" + EnvArtifactsDir, filepath.Join(s.ArtifactsDir, artifact)})
	}
	return out
}

// checkNewFile refuses under name a place the run would write a record to
// only at its end, unless the file is new and its directory exists: no
// session may run to completion and then lose its record, or overwrite an
// earlier one.
func checkNewFile(name exit.Name, f recordFile) error {
	if _, err := os.Lstat(f.path); err == nil {
		return exit.Refuse(name, "%s %s already exists; name a new file, so that no earlier record is overwritten", f.from, f.path)
	}
	if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
		return exit.Refuse(name, "%s %s: its directory %s does not exist; create it first", f.from, f.path, filepath.Dir(f.path))
	}
	return nil
}

// checkSessionOutputs refuses, before anything starts, a fleet's places
// that the run could not write.
func checkSessionOutputs(s *Spec) error {
	if d := s.ArtifactsDir; d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return exit.Refuse(RefuseArtifactsDir, "$%s %s is not an existing directory; the fleet names a directory it made for this session", EnvArtifactsDir, d)
		}
		for _, name := range []string{ArtifactEvents, ArtifactAttestation, ArtifactStatement} {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				return exit.Refuse(RefuseArtifactsDir, "$%s %s already holds %s, an earlier run's record; each session needs a directory of its own", EnvArtifactsDir, d, name)
			}
		}
	}
	if s.SummaryFile != "" {
		return checkNewFile(RefuseSummaryFile, recordFile{"$" + EnvSummaryFile, s.SummaryFile})
	}
	return nil
}

// writeAttestations writes doc to each attestation file and returns them
// with their digests.
func (s *Spec) writeAttestations(doc attest.Document) ([]attest.RecordFile, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	sum := sha256.Sum256(b)
	var out []attest.RecordFile
	for _, f := range s.attestationFiles() {
		if err := newfile.Write(f.path, b, 0o600); err != nil {
			return out, exit.Wrap(RefuseAttestationFile, err, "%s %s cannot be created (it must not exist yet)", f.from, f.path)
		}
		out = append(out, attest.RecordFile{What: "attestation", Path: absPath(f.path), SHA256: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// ended is what the run's end left for its summary.
type ended struct {
	doc      attest.Document
	terminal *record.SessionEnded
	quota    *quotaStop
	written  []attest.RecordFile
}

// summarize writes the run summary when the fleet asked for one, and
// returns the run's exit code and error: a summary that cannot be written
// makes the run exit 2, since the fleet would file nothing for it.
func (r *run) summarize(code exit.Code, err error) (exit.Code, error) {
	s := r.spec
	var refusal *exit.Refusal
	if s.SummaryFile == "" || errors.As(err, &refusal) && refusal.Name == RefuseSummaryFile {
		return code, err
	}
	sum := attest.NewSummary(s.Kind, code)
	sum.Run = r.out.runID
	sum.TraceID = r.traceID()
	if err != nil {
		line := exit.Line(err)
		sum.Reason = &line
	}
	if e := r.ended; e != nil {
		sum.ChildExit, sum.ControlVerdict, sum.Audited = e.doc.ChildExit, e.doc.ControlVerdict, e.doc.Audited
		census := e.doc.Census
		sum.Census = &census
		if t := e.terminal; t != nil {
			if t.FinalAnswer != nil {
				sum.SetAnswer(t.FinalAnswer.Text)
			}
			sum.Usage, sum.TotalCostUSD, sum.NumTurns = t.Usage, t.TotalCostUSD, t.NumTurns
		}
		if e.quota != nil {
			sum.UpstreamQuota = e.quota.rec.Quota
			line := e.quota.line()
			sum.Reason = &line
		}
		sum.Records = append(sum.Records, e.written...)
	}
	sum.Records = append(sum.Records, r.statementWritten...)
	if r.out.events != nil && r.out.events.Lines() > 0 {
		for _, f := range s.eventFiles() {
			sum.Records = append(sum.Records, attest.RecordFile{What: "events", Path: absPath(f.path)})
		}
	}
	b, jerr := json.Marshal(sum)
	if jerr == nil {
		jerr = newfile.Write(s.SummaryFile, append(b, '\n'), 0o600)
	}
	if jerr == nil {
		return code, err
	}
	failure := exit.Wrap(RefuseSummaryFile, jerr, "$%s %s cannot be created (it must not exist yet); the fleet gets no summary of this run", EnvSummaryFile, s.SummaryFile)
	if err != nil {
		fmt.Fprintln(r.io.Stderr, exit.Line(failure))
		return exit.Refused, err
	}
	return exit.Refused, failure
}

// absPath is p made absolute, for a reader that does not share the run's
// working directory; p itself when it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
