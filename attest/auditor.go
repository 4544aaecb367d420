package attest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/treepath"
)

// Refusal names of the auditor seam (all exit 2). The first eight are the
// pairing checks of SPEC §9, in the order they run.
const (
	RefuseAuditorWithoutAudit    exit.Name = "auditor-without-audit"
	RefuseSpecWithoutAuditor     exit.Name = "spec-without-auditor"
	RefuseAuditorWithoutSpec     exit.Name = "auditor-without-spec"
	RefuseAuditorEmptyPrefix     exit.Name = "auditor-empty-prefix"
	RefuseAuditorNotFound        exit.Name = "auditor-not-found"
	RefuseAuditorNotExecutable   exit.Name = "auditor-not-executable"
	RefuseSpecUnreadable         exit.Name = "spec-unreadable"
	RefuseSpecInsideWritableTree exit.Name = "spec-inside-writable-tree"

	// After the session: the program or the spec is not what was checked.
	RefuseAuditorChanged exit.Name = "auditor-changed"
	RefuseSpecChanged    exit.Name = "spec-changed"
	// The auditor could not be started, was cut short, or said nothing.
	RefuseAuditorNotInvokable  exit.Name = "auditor-not-invokable"
	RefuseAuditorInterrupted   exit.Name = "auditor-interrupted"
	RefuseAuditorNoVerdictRows exit.Name = "auditor-no-verdict-rows"
)

// Pairing is what run's flags say about the external auditor.
type Pairing struct {
	// Audit is whether the run asked for an audit: --audit or --hermetic
	// strict.
	Audit bool
	// Auditor is --auditor PREFIX, split on white space into the argv
	// prefix; nil when the flag was not given.
	Auditor *string
	// Spec is --spec FILE; nil when the flag was not given.
	Spec *string
	// Args are the pass-through arguments after "--", appended last.
	Args []string
	// WritableTree is --cwd DIR, the tree the child may write; empty when
	// the child writes nowhere.
	WritableTree string
	// PATH is the PATH run itself was started with: the auditor inherits
	// it, so a bare program name is looked up there.
	PATH string
}

// Auditor is a checked pairing: the program resolved and both files
// digested at the start, so that the re-check after the session can tell
// whether either moved.
type Auditor struct {
	p             Pairing
	prefix        []string
	program       string // the resolved program file
	spec          string // absolute path of the spec
	programDigest string
	specDigest    string
}

// CheckPairing runs the eight pairing checks of SPEC §9 in order and
// reports the first that fails as a refusal. It returns nil and no error when
// the run names no auditor. Nothing may be started before it returns.
func CheckPairing(p Pairing) (*Auditor, error) {
	a, err := check(p)
	if err != nil || a == nil {
		return nil, err
	}
	if p.WritableTree != "" && treepath.Within(a.spec, p.WritableTree) {
		return nil, exit.Refuse(RefuseSpecInsideWritableTree,
			"--spec %s lies inside --cwd %s, a tree the child may write, so the run could rewrite the document it is audited against; keep the spec outside that tree",
			*p.Spec, p.WritableTree)
	}
	return a, nil
}

// check runs pairing checks 1–7: the ones that run again after the session.
func check(p Pairing) (*Auditor, error) {
	if p.Auditor == nil && p.Spec == nil {
		return nil, nil
	}
	if !p.Audit {
		return nil, exit.Refuse(RefuseAuditorWithoutAudit,
			"%s given but the run asks for no audit, and an auditor only runs in an audited run; add --audit (or --hermetic strict), or drop %s",
			givenFlags(p), givenFlags(p))
	}
	if p.Auditor == nil {
		return nil, exit.Refuse(RefuseSpecWithoutAuditor,
			"--spec %s given without --auditor, and only an auditor reads the spec; name the auditor's argv prefix with --auditor PREFIX, or drop --spec", *p.Spec)
	}
	if p.Spec == nil {
		return nil, exit.Refuse(RefuseAuditorWithoutSpec,
			"--auditor %q given without --spec, and the auditor is handed the document it audits against; add --spec FILE", *p.Auditor)
	}
	prefix := strings.Fields(*p.Auditor)
	if len(prefix) == 0 {
		return nil, exit.Refuse(RefuseAuditorEmptyPrefix,
			"--auditor is empty; it takes the auditor's argv prefix, a program name or path and any leading words, for example --auditor 'aep trace check'")
	}
	program, err := resolveProgram(prefix[0], p.PATH)
	if err != nil {
		return nil, err
	}
	programDigest, err := inputfile.Digest(program, maxProgramBytes)
	if err != nil {
		return nil, exit.Wrap(RefuseAuditorNotExecutable, err, "--auditor program %s cannot be read to digest it", program)
	}
	spec, specDigest, err := readSpec(*p.Spec)
	if err != nil {
		return nil, err
	}
	return &Auditor{p: p, prefix: prefix, program: program, spec: spec, programDigest: programDigest, specDigest: specDigest}, nil
}

func givenFlags(p Pairing) string {
	switch {
	case p.Auditor != nil && p.Spec != nil:
		return "--auditor and --spec"
	case p.Auditor != nil:
		return "--auditor"
	}
	return "--spec"
}

// resolveProgram finds the file the auditor's first word names: a word with
// a slash is a path; a bare name is the first executable regular file of
// that name on path (relative entries are skipped: they would depend on the
// directory). A bare name found only as non-executable files is named as
// such, not as missing.
func resolveProgram(word, path string) (string, error) {
	if strings.Contains(word, "/") {
		abs, err := filepath.Abs(word)
		if err != nil {
			return "", exit.Wrap(RefuseAuditorNotFound, err, "--auditor program %s", word)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", exit.Wrap(RefuseAuditorNotFound, err, "--auditor program %s does not exist; name an existing program", word)
		}
		return abs, executable(abs, word)
	}
	var first string
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, word)
		if _, err := os.Stat(cand); err != nil {
			continue
		}
		if executable(cand, word) == nil {
			return cand, nil
		}
		if first == "" {
			first = cand
		}
	}
	if first != "" {
		return "", executable(first, word)
	}
	return "", exit.Refuse(RefuseAuditorNotFound,
		"--auditor program %q is on no directory of the PATH run was started with (%s), which is the PATH the auditor inherits; give its path, or put it on that PATH", word, path)
}

// executable reports whether path is an executable regular file.
func executable(path, word string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return exit.Wrap(RefuseAuditorNotFound, err, "--auditor program %s", word)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return exit.Refuse(RefuseAuditorNotExecutable,
			"--auditor program %s (%s) is not an executable regular file (it is %s, mode %s); name the program itself, or make it executable", word, path, inputfile.Kind(fi.Mode()), fi.Mode().Perm())
	}
	return nil
}

// Bounds on what is digested: a program can be a large native binary, a
// spec is a document.
const (
	maxProgramBytes = 4 << 30
	maxSpecBytes    = 64 << 20
)

// readSpec checks that the spec is a readable regular file (never waited
// on) and digests it.
func readSpec(spec string) (string, string, error) {
	abs, err := filepath.Abs(spec)
	if err != nil {
		return "", "", exit.Wrap(RefuseSpecUnreadable, err, "--spec %s", spec)
	}
	d, err := inputfile.Digest(abs, maxSpecBytes)
	if err != nil {
		return "", "", exit.Within(RefuseSpecUnreadable, err, "--spec %v; name the document the auditor audits against, a readable regular file", err)
	}
	return abs, d, nil
}

// Recheck runs pairing checks 1–7 again after the session and compares the
// program and the spec with their digests from the start: a file removed,
// replaced or edited during the session is a refusal after it.
func (a *Auditor) Recheck() error {
	now, err := check(a.p)
	if err != nil {
		var r *exit.Refusal
		if errors.As(err, &r) {
			r.Message = "after the session: " + r.Message
		}
		return err
	}
	switch {
	case now.program != a.program:
		return exit.Refuse(RefuseAuditorChanged,
			"after the session, --auditor %s resolves to %s, not to %s as at the start; keep the auditor in place while a run is audited", a.prefix[0], now.program, a.program)
	case now.programDigest != a.programDigest:
		return exit.Refuse(RefuseAuditorChanged,
			"--auditor program %s changed during the session (sha256 %s at the start, %s now); keep the auditor in place while a run is audited", a.program, a.programDigest, now.programDigest)
	case now.specDigest != a.specDigest:
		return exit.Refuse(RefuseSpecChanged,
			"--spec %s changed during the session (sha256 %s at the start, %s now); an audit is only good against the document the run started with", a.spec, a.specDigest, now.specDigest)
	}
	return nil
}

// Argv is the auditor's command line: the prefix words, then
// --spec S --transcript T, then the pass-through arguments.
func (a *Auditor) Argv(transcript string) []string {
	argv := append([]string{}, a.prefix...)
	argv = append(argv, "--spec", a.spec, "--transcript", transcript)
	return append(argv, a.p.Args...)
}

// AuditorResult is what the external auditor said.
type AuditorResult struct {
	Argv []string `json:"argv"`
	// Exit is the auditor's exit status; nil when it was ended by a signal.
	Exit   *int   `json:"exit" jsonschema:"nullable"`
	Signal string `json:"signal,omitempty"`
	// VerdictRows counts the non-blank lines of its stdout; Rows holds the
	// first of them (bounded).
	VerdictRows int      `json:"verdict_rows"`
	Rows        []string `json:"rows,omitempty"`
}

// code maps the auditor's exit onto the run's: 1 is a gap, 3 is unknown,
// anything else does not move the result.
func (r *AuditorResult) code() exit.Code {
	if r == nil || r.Exit == nil {
		return exit.OK
	}
	switch *r.Exit {
	case 1:
		return exit.Gap
	case 3:
		return exit.Unknown
	}
	return exit.OK
}

// Line is the report's auditor line.
func (r *AuditorResult) Line() string {
	return fmt.Sprintf("auditor %q: exit %s, %d verdict rows", r.Argv, r.status(), r.VerdictRows)
}

// status is the exit status as the report prints it.
func (r *AuditorResult) status() string {
	switch {
	case r.Exit != nil:
		return fmt.Sprint(*r.Exit)
	case r.Signal != "":
		return "none (signal " + r.Signal + ")"
	}
	return "none"
}

// maxRowsKept bounds the verdict rows kept; all are counted.
const maxRowsKept = 1000

// Run re-checks the pairing, then runs the auditor once on the retained
// vendor transcript and reads its verdict rows; an empty transcript is
// passed as the word "none". Its stderr goes to stderr (nil discards it),
// and it inherits metaharness's environment. A re-check failure, a spawn failure, a cancelled ctx or
// zero verdict rows is a refusal: setup failures, never a verdict.
func (a *Auditor) Run(ctx context.Context, transcript string, stderr io.Writer) (*AuditorResult, error) {
	if a == nil {
		return nil, nil // no auditor was named: the floor alone audits
	}
	if err := a.Recheck(); err != nil {
		return nil, err
	}
	if transcript == "" {
		transcript = "none"
	}
	argv := a.Argv(transcript)
	cmd := exec.CommandContext(ctx, a.program)
	cmd.Args = argv
	rows := &rowCounter{}
	cmd.Stdout = rows
	cmd.Stderr = stderr
	// A grandchild that keeps stdout open must not hold the run forever,
	// and a cut short auditor takes its whole process group with it.
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	rows.flush()
	if ctx.Err() != nil {
		return nil, exit.Wrap(RefuseAuditorInterrupted, ctx.Err(), "the auditor %s was cut short", a.program)
	}
	res := &AuditorResult{Argv: argv, VerdictRows: rows.count, Rows: rows.kept}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.Exit = new(int)
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = signalName(int(ws.Signal()))
		} else {
			code := ee.ExitCode()
			res.Exit = &code
		}
	default:
		return nil, exit.Wrap(RefuseAuditorNotInvokable, err, "the auditor %s could not be started", a.program)
	}
	if res.VerdictRows == 0 {
		return nil, exit.Refuse(RefuseAuditorNoVerdictRows,
			"the auditor %q wrote no verdict row on stdout (exit %s), and a silent auditor is a setup failure, never a verdict; check that it reads --spec and --transcript", argv, res.status())
	}
	return res, nil
}

// rowCounter counts the non-blank lines written to it, keeping the first
// maxRowsKept of them, and never holds more than one bounded line.
type rowCounter struct {
	count    int
	kept     []string
	partial  []byte
	nonBlank bool // the current line has non-blank content, kept or not
}

const maxRowBytes = 64 << 10

func (c *rowCounter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxRowBytes - len(c.partial); room > 0 {
			c.partial = append(c.partial, chunk[:min(room, len(chunk))]...)
		}
		if len(bytes.TrimSpace(chunk)) > 0 {
			c.nonBlank = true
		}
		if i < 0 {
			break
		}
		c.flush()
		p = p[i+1:]
	}
	return n, nil
}

// flush ends the current line.
func (c *rowCounter) flush() {
	if c.nonBlank {
		c.count++
		if len(c.kept) < maxRowsKept {
			c.kept = append(c.kept, strings.TrimSpace(string(c.partial)))
		}
	}
	c.partial, c.nonBlank = c.partial[:0], false
}
