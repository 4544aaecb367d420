package provenance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// maxEnvelope bounds a statement file: its subjects are a few dozen.
const maxEnvelope = 16 << 20

// Check is what one subject's file says now.
type Check string

const (
	CheckOK         Check = "ok"         // the file's digest is the statement's
	CheckDiffers    Check = "differs"    // the file is there with other bytes
	CheckMissing    Check = "missing"    // no file at its name, nor beside the statement
	CheckUnreadable Check = "unreadable" // a file is there and cannot be digested
	CheckUnkept     Check = "unkept"     // the run kept no file of it (stdout, the scratch tree)
)

// SubjectCheck is one subject checked: the files found for it and what
// their digest is now.
type SubjectCheck struct {
	Subject Subject
	Check   Check
	// Paths are the files digested, in the order checked: its name, and
	// the file of its name beside the statement when that is another one;
	// empty when none was found.
	Paths []string
	// Path is the file Check speaks of: the one that differs or could not
	// be read, else the first found.
	Path string
	Now  string // Path's digest now, or why it could not be read
}

// Report is one statement verified.
type Report struct {
	Sealed *Sealed
	// Signed: the envelope carries signatures at all; Verified: one of
	// them verifies with the key.
	Signed, Verified bool
	SignatureError   error
	Subjects         []SubjectCheck
}

// Verify reads the statement in file and checks it: its signature with v,
// then each subject's digest against its file at its name and against the
// file of its name beside file (a record moved with its statement): every
// one of them that exists must match, so that neither a forged file beside
// a moved statement nor one left at the old place passes while the other
// holds. Only an error is a refusal; a signature or a digest that does not
// hold is in the report.
func Verify(file string, v *Verifier) (*Report, error) {
	b, err := inputfile.Read(file, maxEnvelope)
	if err != nil {
		return nil, exit.Within(RefuseStatementUnreadable, err, "--verify %v; name the statement a run wrote (run --statement FILE)", err)
	}
	sealed, err := Open(b)
	if err != nil {
		return nil, exit.Within(RefuseStatementMalformed, err, "--verify %s %v; name the statement a run wrote (run --statement FILE)", file, err)
	}
	rep := &Report{Sealed: sealed, Signed: len(sealed.Envelope.Signatures) > 0}
	if rep.Signed {
		var ev *dsse.EnvelopeVerifier
		if ev, err = dsse.NewEnvelopeVerifier(v.v); err == nil {
			_, err = ev.Verify(context.Background(), &sealed.Envelope)
		}
		rep.Verified, rep.SignatureError = err == nil, err
	}
	beside := filepath.Dir(file)
	for _, s := range sealed.Statement.Subject {
		rep.Subjects = append(rep.Subjects, checkSubject(s, beside))
	}
	return rep, nil
}

func checkSubject(s Subject, beside string) SubjectCheck {
	c := SubjectCheck{Subject: s}
	if !s.kept() {
		c.Check = CheckUnkept
		return c
	}
	c.Check = CheckMissing
	for _, p := range []string{s.Name, filepath.Join(beside, filepath.Base(s.Name))} {
		if slices.Contains(c.Paths, p) {
			continue
		}
		sum, err := inputfile.Digest(p, maxSubject)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		c.Paths = append(c.Paths, p)
		switch {
		case c.Check == CheckDiffers || c.Check == CheckUnreadable:
			// The first file that does not hold is the one reported.
		case err != nil:
			c.Check, c.Path, c.Now = CheckUnreadable, p, err.Error()
		case sum != s.Digest["sha256"]:
			c.Check, c.Path, c.Now = CheckDiffers, p, sum
		case c.Check == CheckMissing:
			c.Check, c.Path, c.Now = CheckOK, p, sum
		}
	}
	return c
}

// alsoChecked names the other file checked for a subject that does not
// hold, which may well match: both must.
func alsoChecked(c SubjectCheck) string {
	for _, p := range c.Paths {
		if p != c.Path {
			return " (" + p + " was checked too: every file of its name, at its place and beside the statement, must match)"
		}
	}
	return ""
}

// Holds reports whether the statement verifies: signed, the signature good
// with the key, and every file it names kept matching its digest.
func (r *Report) Holds() bool {
	if !r.Verified {
		return false
	}
	for _, c := range r.Subjects {
		if c.Check != CheckOK && c.Check != CheckUnkept {
			return false
		}
	}
	return true
}

// Code is the report's exit code: 0 when it holds, 1 when it does not.
func (r *Report) Code() exit.Code {
	if r.Holds() {
		return exit.OK
	}
	return exit.Gap
}

// Print writes the report: the signature's line, one line per subject,
// then the verdict.
func (r *Report) Print(w io.Writer, v *Verifier) {
	k := v.Signing()
	switch {
	case !r.Signed:
		fmt.Fprintln(w, "signature none: the envelope is unsigned (the run was given no --sign-key), so nothing vouches for the digests below")
	case r.Verified:
		fmt.Fprintf(w, "signature ok: %s key %s\n", k.Scheme, k.KeyID)
	default:
		fmt.Fprintf(w, "signature bad: no signature of the envelope verifies with %s key %s (%v)\n", k.Scheme, k.KeyID, r.SignatureError)
	}
	for _, c := range r.Subjects {
		s := c.Subject
		want := "sha256:" + s.Digest["sha256"]
		switch c.Check {
		case CheckOK:
			fmt.Fprintf(w, "ok         %-14s %s %s\n", s.Annotations.Role, want, strings.Join(c.Paths, " and "))
		case CheckDiffers:
			fmt.Fprintf(w, "differs    %-14s %s %s is sha256:%s now%s\n", s.Annotations.Role, want, c.Path, c.Now, alsoChecked(c))
		case CheckUnreadable:
			fmt.Fprintf(w, "unreadable %-14s %s %s\n", s.Annotations.Role, want, c.Now)
		case CheckMissing:
			fmt.Fprintf(w, "missing    %-14s %s %s: no such file, nor one of its name beside the statement\n", s.Annotations.Role, want, s.Name)
		case CheckUnkept:
			fmt.Fprintf(w, "unkept     %-14s %s %s: the run kept no file of it\n", s.Annotations.Role, want, s.Name)
		}
	}
	if r.Holds() {
		fmt.Fprintf(w, "statement verified: run %s, exit %d\n", r.Sealed.Statement.Predicate.Run, r.Sealed.Statement.Predicate.ExitCode)
		return
	}
	fmt.Fprintf(w, "statement not verified: run %s\n", r.Sealed.Statement.Predicate.Run)
}
