package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/provenance"
	"github.com/metaharness/metaharness/record"
)

// ArtifactStatement is the run's signed statement in a fleet's artifacts
// directory (EnvArtifactsDir), beside the event stream and the
// attestation: one DSSE envelope on one line, as in-toto bundles are.
const ArtifactStatement = "metaharness-statement.intoto.jsonl"

// statement is what a run keeps for its statement (--statement): the key,
// the digests of the inputs taken when they were checked, and the stream's
// digest when it goes to stdout only.
type statement struct {
	signer *provenance.Signer // nil: unsigned
	inputs []provenance.Subject
	stdout hash.Hash // the stream as stdout carried it; nil unless stdout carries it
	// written are the files it was written to, for the summary.
	written []attest.RecordFile
}

// statementFiles are the files the statement is written to.
func (r *run) statementFiles() []recordFile {
	return r.recordFiles("--statement", r.spec.Statement, ArtifactStatement)
}

// checkStatement refuses, before anything starts, a statement the run
// could not write or sign, and digests the caller's files the run reads
// (the frame, the catalogue) as the checks read them: the statement
// states what the run read, not what lies there at its end (each
// --context file's digest is the one its own check took).
func (r *run) checkStatement() error {
	s := r.spec
	files := r.statementFiles()
	if s.SignKey != "" && len(files) == 0 {
		return exit.Refuse(provenance.RefuseSignKeyWithoutStatement, "--sign-key %s signs the run's statement, and no --statement FILE (nor $%s) asks for one; add --statement FILE", s.SignKey, EnvArtifactsDir)
	}
	if len(files) == 0 {
		return nil
	}
	if s.Statement != "" {
		if err := checkNewFile(provenance.RefuseStatementFile, recordFile{"--statement", s.Statement}); err != nil {
			return err
		}
	}
	st := &statement{}
	if s.SignKey != "" {
		var err error
		if st.signer, err = provenance.LoadSigner(s.SignKey); err != nil {
			return err
		}
	}
	for _, in := range []struct {
		role provenance.Role
		path string
	}{{provenance.RoleFrame, s.Frame}, {provenance.RoleCatalogue, s.Catalogue}} {
		if in.path == "" {
			continue
		}
		sub, err := provenance.FileSubject(in.role, in.path)
		if err != nil {
			return exit.Wrap(provenance.RefuseStatementFile, err, "digesting the %s for --statement", in.role)
		}
		st.inputs = append(st.inputs, sub)
	}
	if s.Output != kind.OutputFinal {
		st.stdout = sha256.New()
	}
	r.statement = st
	return nil
}

// statementSink is the sink that digests the stream as stdout carries it,
// for a statement; none when no statement is asked or stdout carries none.
func (r *run) statementSink() []record.Sink {
	if r.statement == nil || r.statement.stdout == nil {
		return nil
	}
	return []record.Sink{{Name: "the statement's digest of stdout", W: r.statement.stdout}}
}

// writeStatement writes the statement once the run has ended, whatever
// its exit code, when the stream was written (a refusal before any line
// leaves no record to state): after stream.closed and the attestation,
// before the scratch tree goes. A statement that cannot be written makes
// the run exit 2, named on stderr.
func (r *run) writeStatement(code exit.Code, err error) (exit.Code, error) {
	files := r.statementFiles()
	if r.statement == nil || len(files) == 0 || r.out.events == nil || r.out.events.Lines() == 0 {
		return code, err
	}
	b, serr := provenance.Seal(provenance.Statement{Subject: r.subjects(), Predicate: r.predicate(code, err)}, r.statement.signer)
	sum := provenance.DigestOf(b)
	for _, f := range files {
		if serr == nil {
			if serr = newfile.Write(f.path, b, 0o600); serr != nil {
				serr = fmt.Errorf("%s %s cannot be created (it must not exist yet): %w", f.from, f.path, serr)
			}
		}
		if serr != nil {
			break
		}
		r.statement.written = append(r.statement.written, attest.RecordFile{What: "statement", Path: absPath(f.path), SHA256: sum})
	}
	if serr == nil {
		return code, err
	}
	failure := exit.Wrap(provenance.RefuseStatementFile, serr, "the run's statement was not written")
	if err != nil {
		fmt.Fprintln(r.io.Stderr, exit.Line(failure))
		return exit.Refused, err
	}
	return exit.Refused, failure
}

// subjects are the digests of what the run produced and read.
func (r *run) subjects() []provenance.Subject {
	s := r.spec
	var out []provenance.Subject
	file := func(role provenance.Role, path string) {
		sub, err := provenance.FileSubject(role, path)
		if err != nil {
			r.io.Log.Warn("digesting a record for the statement: " + err.Error())
			return
		}
		out = append(out, sub)
	}
	for _, f := range r.eventFiles() {
		file(provenance.RoleEvents, f.path)
	}
	if h := r.statement.stdout; h != nil {
		out = append(out, provenance.UnkeptSubject(provenance.RoleEvents, "stdout:events", hex.EncodeToString(h.Sum(nil))))
	}
	if r.ended != nil {
		for _, f := range r.ended.written {
			file(provenance.RoleAttestation, f.Path)
		}
	}
	switch retained := filepath.Join(s.RetainDir, "transcript.jsonl"); {
	case s.RetainDir != "" && exists(retained):
		file(provenance.RoleTranscript, retained)
	default:
		r.unkept(&out, provenance.RoleTranscript, r.tree.transcript())
	}
	if r.in.contract != nil && r.tree.root != "" {
		r.unkept(&out, provenance.RoleCatalogueCopy, filepath.Join(r.tree.root, "catalogue.json"))
	}
	out = append(out, r.statement.inputs...)
	// The context files as the checks read them, which come after this
	// statement's own check.
	for _, f := range r.in.context {
		abs, _ := filepath.Abs(filepath.Join(s.Cwd, filepath.FromSlash(f.Path)))
		out = append(out, provenance.Subject{Name: abs, Digest: map[string]string{"sha256": f.SHA256},
			Annotations: provenance.Annotations{Role: provenance.RoleContext, Kept: true}})
	}
	return out
}

// unkept adds the subject of a file in the scratch tree, which the run
// removes: its digest, named scratch:<its name>; nothing when it was never
// written.
func (r *run) unkept(out *[]provenance.Subject, role provenance.Role, path string) {
	if r.tree.root == "" || !exists(path) {
		return
	}
	sum, err := inputfile.Digest(path, 4<<30)
	if err != nil {
		r.io.Log.Warn("digesting a scratch file for the statement: " + err.Error())
		return
	}
	*out = append(*out, provenance.UnkeptSubject(role, "scratch:"+filepath.Base(path), sum))
}

// predicate is how the run ended and, once it had one, its attestation.
func (r *run) predicate(code exit.Code, err error) provenance.Predicate {
	p := provenance.Predicate{Run: r.out.runID, Kind: r.spec.Kind, Metaharness: r.io.Version, ExitCode: int(code), TraceID: r.traceID()}
	if err != nil {
		line := exit.Line(err)
		p.Reason = &line
	}
	if e := r.ended; e != nil {
		p.Attestation = provenance.VerdictsOf(&e.doc)
		switch {
		case err != nil:
		case e.upstream != nil && e.upstream.Reason == loopback.StopQuota:
			line := e.upstream.line()
			p.Reason = &line
		case e.line != "":
			p.Reason = &e.line
		}
	}
	return p
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
