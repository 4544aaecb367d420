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
	"github.com/metaharness/metaharness/internal/treepath"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
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

// ArtifactSummary is the run summary's name in a run's own records
// directory (--records-dir); a fleet that names $HARNESS_OUTPUT_FILE names
// the file itself.
const ArtifactSummary = "metaharness-summary.json"

// recordFile is one file the run writes a record to: the flag or variable
// that named it (for messages) and its path.
type recordFile struct{ from, path string }

// runRecords is the run's own directory under --records-dir, "" when the
// run has none: no --records-dir, or the fleet names a place for every
// record itself (its variables win over the flag).
func (r *run) runRecords() string {
	s := r.spec
	if s.RecordsDir == "" || s.ArtifactsDir != "" && s.SummaryFile != "" {
		return ""
	}
	return filepath.Join(s.RecordsDir, r.out.runID)
}

// eventFiles are the files the event stream is written to.
func (r *run) eventFiles() []recordFile {
	return r.recordFiles("--events", r.spec.Events, ArtifactEvents)
}

// attestationFiles are the files the attestation is written to.
func (r *run) attestationFiles() []recordFile {
	return r.recordFiles("--attestation", r.spec.AttestationFile, ArtifactAttestation)
}

// recordFiles are the files one record is written to: the one flag names
// (path, when given) and its artifact in the fleet's directory or, where
// the fleet names none, in the run's own records directory.
func (r *run) recordFiles(flag, path, artifact string) []recordFile {
	s := r.spec
	var out []recordFile
	if path != "" {
		out = append(out, recordFile{flag, path})
	}
	switch dir := r.runRecords(); {
	case s.ArtifactsDir != "":
		out = append(out, recordFile{"$" + EnvArtifactsDir, filepath.Join(s.ArtifactsDir, artifact)})
	case dir != "":
		out = append(out, recordFile{"--records-dir", filepath.Join(dir, artifact)})
	}
	return out
}

// summaryFile is where the run summary goes: the fleet's file, else the
// run's records directory; "" when neither names a place.
func (r *run) summaryFile() recordFile {
	if f := r.spec.SummaryFile; f != "" {
		return recordFile{"$" + EnvSummaryFile, f}
	}
	if dir := r.runRecords(); dir != "" {
		return recordFile{"--records-dir", filepath.Join(dir, ArtifactSummary)}
	}
	return recordFile{}
}

// makeRunRecords creates the run's own records directory, before anything
// else is checked, so that even a refused run leaves its summary there: one
// new directory per run, created exclusively (mode 0700), so that no run
// writes into another's.
func (r *run) makeRunRecords() error {
	dir := r.runRecords()
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(r.spec.RecordsDir); err != nil || !fi.IsDir() {
		return exit.Refuse(RefuseRecordsDir, "--records-dir %s is not an existing directory; create it first (each run makes a directory of its own inside it)", r.spec.RecordsDir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return exit.Wrap(RefuseRecordsDir, err, "--records-dir %s: the run's own directory %s cannot be created (it must not exist yet)", r.spec.RecordsDir, dir)
	}
	r.out.recordsMade = true
	return nil
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
func checkSessionOutputs(s *kind.Spec) error {
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
func (r *run) writeAttestations(doc attest.Document) ([]attest.RecordFile, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	sum := sha256.Sum256(b)
	var out []attest.RecordFile
	for _, f := range r.attestationFiles() {
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
	upstream *upstreamStop // the upstream's answer the run stopped at, if any
	written  []attest.RecordFile
	// outcome and line are an exit 3's own (unknownLine); zero otherwise.
	outcome attest.Outcome
	line    string
}

// outcome is how the run ended, for its summary and its status line.
func (r *run) outcome(code exit.Code) attest.Outcome {
	if e := r.ended; e != nil && code == exit.Unknown && e.outcome.Name != "" {
		return e.outcome
	}
	if r.limited && code == exit.Refused {
		return attest.OutcomeHostLimit
	}
	return attest.OutcomeOf(code)
}

// reason is the line that says why the run ended so, as printed: the
// refusal, the usage-limit line, or an exit 3's line; "" when the exit
// code says it all.
func (r *run) reason(err error) string {
	e := r.ended
	switch {
	case e != nil && e.upstream != nil && e.upstream.Reason == loopback.StopQuota:
		return e.upstream.line()
	case err != nil:
		return exit.Line(err)
	case e != nil:
		return e.line
	}
	return ""
}

// summarize writes the run summary where the fleet or --records-dir asks
// for one and prints --output status's line, and returns the run's exit
// code and error: a summary that cannot be written makes the run exit 2,
// since the fleet would file nothing for it.
func (r *run) summarize(code exit.Code, err error) (exit.Code, error) {
	s := r.spec
	dest := r.summaryFile()
	var refusal *exit.Refusal
	if errors.As(err, &refusal) && (refusal.Name == RefuseSummaryFile || refusal.Name == RefuseRecordsDir && !r.out.recordsMade) {
		dest = recordFile{}
	}
	if dest.path != "" {
		if werr := r.writeSummary(dest, code, err); werr != nil {
			if err != nil {
				fmt.Fprintln(r.io.Stderr, exit.Line(werr))
			} else {
				err = werr
			}
			code = exit.Refused
		}
	}
	if s.Output == kind.OutputStatus && !(code == exit.Quota && r.ended != nil) {
		o := r.outcome(code)
		where := "no record was kept"
		switch {
		case dest.path != "":
			where = "the run summary, with the answer, is " + absPath(dest.path)
		case s.Events != "":
			where = "the event stream, with the answer, is " + absPath(s.Events)
		}
		fmt.Fprintf(r.io.Stdout, "metaharness: done: run %s exited %d (%s); %s\n", r.out.runID, code, o.Name, where)
	}
	return code, err
}

// writeSummary writes the run summary to dest.
func (r *run) writeSummary(dest recordFile, code exit.Code, err error) error {
	sum := attest.NewSummary(r.spec.Kind, r.outcome(code))
	sum.Run = r.out.runID
	sum.TraceID = r.traceID()
	if line := r.reason(err); line != "" {
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
		if e.upstream != nil && e.upstream.Reason == loopback.StopQuota {
			sum.UpstreamQuota = e.upstream.Record.Quota
		}
		sum.Records = append(sum.Records, e.written...)
	}
	if st := r.statement; st != nil {
		sum.Records = append(sum.Records, st.written...)
	}
	if r.out.events != nil && r.out.events.Lines() > 0 {
		for _, f := range r.eventFiles() {
			sum.Records = append(sum.Records, attest.RecordFile{What: "events", Path: absPath(f.path)})
		}
	}
	b, jerr := json.Marshal(sum)
	if jerr == nil {
		jerr = newfile.Write(dest.path, append(b, '\n'), 0o600)
	}
	if jerr != nil {
		return exit.Wrap(RefuseSummaryFile, jerr, "%s %s cannot be created (it must not exist yet); the fleet gets no summary of this run", dest.from, dest.path)
	}
	return nil
}

// absPath is p made absolute, for a reader that does not share the run's
// working directory; p itself when it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// checkRecordPlaces refuses a record placed where the child may write
// (--cwd): the agent could replace the file before, while or after the run
// writes it, and an embedder would read the agent's words as the run's.
// A directory of records is refused as well when the tree lies inside it.
// Paths are compared resolved, so that a link cannot hide the overlap.
func checkRecordPlaces(s *kind.Spec) error {
	if s.Cwd == "" {
		return nil
	}
	for _, f := range []struct {
		recordFile
		dir bool
	}{
		{recordFile{"--events", s.Events}, false},
		{recordFile{"--attestation", s.AttestationFile}, false},
		{recordFile{"--statement", s.Statement}, false},
		{recordFile{"$" + EnvSummaryFile, s.SummaryFile}, false},
		{recordFile{"--records-dir", s.RecordsDir}, true},
		{recordFile{"$" + EnvArtifactsDir, s.ArtifactsDir}, true},
		{recordFile{"--retain-dir", s.RetainDir}, true},
	} {
		if f.path != "" && (treepath.Within(f.path, s.Cwd) || f.dir && treepath.Within(s.Cwd, f.path)) {
			return exit.Refuse(RefuseRecordInWritableTree, "%s %s lies in --cwd %s, which the child may write, so the agent could replace the record; name a place outside that tree (beside it, say)", f.from, f.path, s.Cwd)
		}
	}
	return nil
}
