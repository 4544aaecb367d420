package frame

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

func sp(s string) *string { return &s }

// sample is the content of testdata/frames/good-a-sealed-step-frame.json.
func sample() Document {
	return Document{
		Workflow:    Workflow{ID: "fix-bug", Version: "3"},
		Node:        NodeRef{ID: "edit"},
		Step:        record.StepRef{Workflow: "fix-bug", State: "edit", Index: 2, Attempt: 1},
		Prior:       []Fact{{Text: "the failing test is TestParse <x> & \u2028 é", Source: sp("ci")}},
		Obligations: []Requirement{{Text: "keep the public API"}},
		Next:        []NodeRef{{ID: "review"}},
		Handoff:     Handoff{Handoff: HandoffArtifact, Name: sp("patch")},
		Subjects:    SubjectScope{{Paths: "secrets/**", Write: WriteDenied}, {Paths: "src/**", Write: WritePartialOnly}},
		Operations:  []Operation{{Op: "shell"}, {Op: "file.read"}, {Op: MCPCall, Server: "gh", Tool: "issue"}, {Op: "file.edit"}},
	}
}

func mustSeal(t testing.TB, d Document) *Frame {
	t.Helper()
	f, err := Seal(d)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFrameFiles loads every file under testdata/frames; the file's name
// says what it must do: good-* loads, and the others fail with the error
// their prefix names.
func TestFrameFiles(t *testing.T) {
	want := map[string]error{
		"not-json-":        ErrNotJSON,
		"unknown-format-":  ErrUnknownFormat,
		"invalid-":         ErrInvalid,
		"digest-mismatch-": ErrDigestMismatch,
	}
	names, err := filepath.Glob("testdata/frames/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no frame files: %v", err)
	}
	good := mustSeal(t, sample())
	for _, name := range names {
		base := filepath.Base(name)
		t.Run(strings.TrimSuffix(base, ".json"), func(t *testing.T) {
			f, err := Load(name)
			if strings.HasPrefix(base, "good-") {
				if err != nil {
					t.Fatal(err)
				}
				if f.Digest() != good.Digest() {
					t.Errorf("digest %s, want the sample's %s", f.Digest(), good.Digest())
				}
				return
			}
			var sentinel error
			for prefix, e := range want {
				if strings.HasPrefix(base, prefix) {
					sentinel = e
				}
			}
			if sentinel == nil {
				t.Fatalf("%s: the name does not say what the file proves (good-, not-json-, unknown-format-, invalid-, digest-mismatch-)", base)
			}
			if !errors.Is(err, sentinel) {
				t.Fatalf("got %v, want %v", err, sentinel)
			}
			for _, other := range want {
				if other != sentinel && errors.Is(err, other) {
					t.Errorf("%v is also %v: the load errors must be distinct", err, other)
				}
			}
		})
	}
}

// TestParseDraft holds a draft to every rule but the digest's: over
// testdata/frames, a file Parse refuses for its digest alone (left out,
// not hex, stale) is sealed over its content as written, and every other
// file is read exactly as Parse reads it.
func TestParseDraft(t *testing.T) {
	names, err := filepath.Glob("testdata/frames/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no frame files: %v", err)
	}
	digestOnly := map[string]bool{"invalid-no-digest.json": true, "invalid-digest-not-hex.json": true}
	for _, name := range names {
		base := filepath.Base(name)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sealed, perr := Parse(b)
		draft, derr := ParseDraft(b)
		switch {
		case digestOnly[base] || strings.HasPrefix(base, "digest-mismatch-"):
			if derr != nil {
				t.Errorf("%s: the draft is refused: %v", base, derr)
				continue
			}
			if again, err := Parse(draft.Encode()); err != nil || again.Digest() != draft.Digest() {
				t.Errorf("%s: the sealed draft does not load as sealed: %v", base, err)
			}
		case perr != nil:
			if derr == nil || derr.Error() != perr.Error() {
				t.Errorf("%s: Parse says %v, ParseDraft %v", base, perr, derr)
			}
		case derr != nil || draft.Digest() != sealed.Digest():
			t.Errorf("%s: a sealed frame read as a draft: %v", base, derr)
		}
	}
}

func TestDigestMismatchNamesBothDigestsAndIsNeverResealed(t *testing.T) {
	_, err := Load("testdata/frames/digest-mismatch-an-obligation-edited.json")
	var dm *DigestMismatchError
	if !errors.As(err, &dm) {
		t.Fatalf("got %v, want a DigestMismatchError", err)
	}
	good := mustSeal(t, sample())
	if dm.Stated != good.Digest() || dm.Computed == dm.Stated {
		t.Errorf("stated %s computed %s; the stated one is the sample's %s", dm.Stated, dm.Computed, good.Digest())
	}
	before, _ := os.ReadFile("testdata/frames/digest-mismatch-an-obligation-edited.json")
	if _, err := Parse(before); !errors.Is(err, ErrDigestMismatch) {
		t.Fatal("a second load accepted the frame")
	}
	after, _ := os.ReadFile("testdata/frames/digest-mismatch-an-obligation-edited.json")
	if !bytes.Equal(before, after) {
		t.Fatal("loading rewrote the file")
	}
}

func TestSealedFileIsWhatEncodeWrites(t *testing.T) {
	f := mustSeal(t, sample())
	got, err := os.ReadFile("testdata/frames/good-a-sealed-step-frame.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(got), string(f.Encode())); diff != "" {
		t.Errorf("Encode differs from the checked-in sealed file (-file +encode):\n%s", diff)
	}
}

func TestSealSortsOperationsAndDoesNotTouchTheCallersDocument(t *testing.T) {
	d := sample()
	ops := d.Operations
	f := mustSeal(t, d)
	if ops[0].Op != "shell" {
		t.Error("Seal sorted the caller's slice")
	}
	got := f.Operations()
	for i := 1; i < len(got); i++ {
		if got[i-1].Op > got[i].Op {
			t.Fatalf("operations not sorted: %v", got)
		}
	}
	ops[0] = Operation{Op: "subagent.spawn"}
	if f.Admits(Operation{Op: "subagent.spawn"}) {
		t.Error("changing the caller's slice changed the sealed frame")
	}
}

func TestSealRefusesAnInvalidDocument(t *testing.T) {
	d := sample()
	d.Step.Attempt = 0
	if _, err := Seal(d); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
}

func TestDocumentRoundTrips(t *testing.T) {
	f := mustSeal(t, sample())
	again := mustSeal(t, f.Document())
	if again.Digest() != f.Digest() {
		t.Fatalf("resealing the same content changed the digest")
	}
	compact, err := f.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(compact)
	if err != nil {
		t.Fatalf("the compact form does not load: %v\n%s", err, compact)
	}
	if back.Digest() != f.Digest() {
		t.Fatal("the compact form loads with another digest")
	}
}

func TestEveryHandoffVariant(t *testing.T) {
	for _, h := range []Handoff{
		{Handoff: HandoffNone},
		{Handoff: HandoffArtifact, Name: sp("report.md"), Kind: sp("markdown")},
		{Handoff: HandoffStructuredAnswer, Schema: []byte(`{"type":"object","properties":{"ok":{"type":"boolean","default":null}}}`)},
	} {
		d := sample()
		d.Handoff = h
		f := mustSeal(t, d)
		if _, err := Parse(f.Encode()); err != nil {
			t.Errorf("%s: %v", h.Handoff, err)
		}
	}
	for _, h := range []Handoff{
		{Handoff: HandoffNone, Name: sp("x")},
		{Handoff: HandoffStructuredAnswer},
		{Handoff: HandoffStructuredAnswer, Schema: []byte(`[1]`)},
		{Handoff: HandoffArtifact, Name: sp("x"), Schema: []byte(`{}`)},
	} {
		d := sample()
		d.Handoff = h
		if _, err := Seal(d); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v sealed: %v", h, err)
		}
	}
}

func TestAdmits(t *testing.T) {
	f := mustSeal(t, sample())
	for op, want := range map[Operation]bool{
		{Op: "file.read"}:                          true,
		{Op: "file.write"}:                         false,
		{Op: MCPCall, Server: "gh", Tool: "issue"}: true,
		{Op: MCPCall, Server: "gh", Tool: "merge"}: false,
		{Op: MCPCall}:                              false,
	} {
		if got := f.Admits(op); got != want {
			t.Errorf("Admits(%s) = %v, want %v", op, got, want)
		}
	}
}

// TestHandSealingRecipe runs the jq recipe docs/frames.md gives and checks
// it computes the library's digest.
func TestHandSealingRecipe(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed; the recipe in docs/frames.md needs it")
	}
	doc, err := os.ReadFile("../docs/frames.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "jq -cjS '"
	i := bytes.Index(doc, []byte(marker))
	if i < 0 {
		t.Fatal("docs/frames.md shows no jq recipe")
	}
	rest := doc[i+len(marker):]
	program := string(rest[:bytes.IndexByte(rest, '\'')])
	for _, name := range []string{"good-a-sealed-step-frame.json", "good-operations-in-any-order.json", "good-keys-in-any-order-on-one-line.json"} {
		out, err := exec.Command(jq, "-cjS", program, filepath.Join("testdata/frames", name)).Output()
		if err != nil {
			t.Fatalf("%s: jq: %v", name, err)
		}
		if got, want := sha256Hex(out), mustSeal(t, sample()).Digest(); got != want {
			t.Errorf("%s: the recipe digests to %s, the library to %s", name, got, want)
		}
	}

	// The whole recipe, as the page shows it, seals a draft with no digest.
	block := regexp.MustCompile("(?ms)^```sh\n(digest=\\$\\(jq .*?)^```$").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/frames.md shows no ```sh block that begins digest=$(jq")
	}
	dir := t.TempDir()
	draft, err := os.ReadFile("testdata/frames/invalid-no-digest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "draft.json"), draft, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-eo", "pipefail", "-c", string(block[1]))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe: %v\n%s", err, out)
	}
	f, err := Load(filepath.Join(dir, "frame.json"))
	if err != nil || f.Digest() != mustSeal(t, sample()).Digest() {
		t.Errorf("the recipe's frame.json does not load as the sample sealed: %v", err)
	}
}

func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrUnreadable) {
		t.Errorf("directory: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); !errors.Is(err, ErrUnreadable) {
		t.Errorf("missing: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); !errors.Is(err, ErrUnreadable) {
		t.Errorf("too big: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fifo); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "is a named pipe, not a regular file") {
		t.Errorf("named pipe (refused, not waited on): %v", err)
	}
}

// TestKeyRefusalsSayWhere: a repeated key, a key in another case and an
// unknown key are each refused naming the key and its JSON path; the
// decoy of a second "operations" is refused whichever of the two a
// reader would take.
func TestKeyRefusalsSayWhere(t *testing.T) {
	for file, want := range map[string]string{
		"invalid-operations-given-twice.json":             `the key "operations" is given twice in the top-level object`,
		"invalid-a-key-given-twice-in-an-operation.json":  `the key "op" is given twice in operations[3]`,
		"invalid-an-unknown-key.json":                     `the key "admit_everything" in the top-level object is not one of its keys (format, digest, workflow,`,
		"invalid-an-unknown-key-in-an-operation.json":     `the key "admit" in operations[3] is not one of its keys (op, server, tool)`,
		"invalid-a-key-spelled-in-another-case.json":      `the key "Operations" in the top-level object is "operations" spelled in another case`,
		"invalid-a-step-key-spelled-in-another-case.json": `the key "Attempt" in step is "attempt" spelled in another case`,
		"invalid-the-same-key-in-two-spellings.json":      `the key "Operations" in the top-level object is "operations" spelled in another case`,
	} {
		_, err := Load(filepath.Join("testdata/frames", file))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want ErrInvalid saying %q", file, err, want)
		}
		r := Refusal(file, err)
		if r.Name != RefuseFrameInvalid || !strings.Contains(r.Message, want) {
			t.Errorf("%s: refusal %s: %s", file, r.Name, r.Message)
		}
	}
}

func TestLoadForRunRefusals(t *testing.T) {
	cases := map[string]exit.Name{
		"testdata/frames/missing.json":                              RefuseFrameUnreadable,
		"testdata/frames/not-json-truncated.json":                   RefuseFrameInvalid,
		"testdata/frames/unknown-format-no-tag.json":                RefuseFrameInvalid,
		"testdata/frames/invalid-an-unknown-key.json":               RefuseFrameInvalid,
		"testdata/frames/digest-mismatch-an-operation-added.json":   RefuseFrameDigestMismatch,
		"testdata/frames/digest-mismatch-an-obligation-edited.json": RefuseFrameDigestMismatch,
	}
	for path, name := range cases {
		_, err := LoadForRun(path)
		var r *exit.Refusal
		if !errors.As(err, &r) || r.Name != name {
			t.Errorf("%s: got %v, want refusal %s", path, err, name)
			continue
		}
		if !strings.Contains(r.Message, "--frame "+path) {
			t.Errorf("%s: the message does not name the flag and path: %s", path, r.Message)
		}
	}
	if f, err := LoadForRun("testdata/frames/good-a-sealed-step-frame.json"); err != nil || f == nil {
		t.Fatalf("good frame refused: %v", err)
	}
}

func TestRequestDigestIgnoresKeyOrder(t *testing.T) {
	a := RequestDigest("t1", "Bash", []byte(`{"command":"ls","timeout":5}`))
	b := RequestDigest("t1", "Bash", []byte(`{ "timeout": 5, "command": "ls" }`))
	c := RequestDigest("t1", "Bash", []byte(`{"command":"ls -la","timeout":5}`))
	if a != b || a == c {
		t.Fatalf("same request digests differ or different requests agree: %s %s %s", a, b, c)
	}
	if RequestDigest("t1", "Bash", []byte(`{not json`)) == RequestDigest("t1", "Bash", []byte(`{not json!`)) {
		t.Fatal("non-JSON inputs collide")
	}
}
