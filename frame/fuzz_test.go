package frame

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/record"
)

// FuzzParse: the frame loader never panics, and a frame it accepts writes
// out (file form and compact form) to documents that load again with the
// same digest, and reseals to the same digest.
func FuzzParse(f *testing.F) {
	addFrames(f)
	f.Add([]byte(`{"format":"metaharness.frame/1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Parse(b)
		if err != nil {
			return
		}
		compact, err := fr.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range [][]byte{fr.Encode(), compact} {
			again, err := Parse(out)
			if err != nil {
				t.Fatalf("accepted %q but not its own output %q: %v", b, out, err)
			}
			if again.Digest() != fr.Digest() {
				t.Fatalf("the output of %q loads with another digest", b)
			}
		}
		resealed, err := Seal(fr.Document())
		if err != nil || resealed.Digest() != fr.Digest() {
			t.Fatalf("resealing %q: %v", b, err)
		}
	})
}

// FuzzParseDraft: sealing a draft never panics; what it seals loads as a
// run loads it, with the same digest; and a document Parse accepts is
// sealed to the digest it states (a draft differs only in its digest).
func FuzzParseDraft(f *testing.F) {
	addFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		draft, err := ParseDraft(b)
		if sealed, perr := Parse(b); perr == nil && (err != nil || draft.Digest() != sealed.Digest()) {
			t.Fatalf("Parse accepts %q, and ParseDraft says %v", b, err)
		}
		if err != nil {
			return
		}
		again, err := Parse(draft.Encode())
		if err != nil || again.Digest() != draft.Digest() {
			t.Fatalf("sealed %q, and the result does not load as sealed: %v", b, err)
		}
	})
}

// addFrames seeds f with every frame under testdata/frames.
func addFrames(f *testing.F) {
	names, _ := filepath.Glob("testdata/frames/*.json")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzHandleLine feeds one stdin line to a running engine (ask mode, one
// call pending, one decided): it never panics, writes only lines the wire
// accepts, answers a line that carries an id with exactly one
// command.result under that id, and reports any other non-blank line with
// exactly one stderr line.
func FuzzHandleLine(f *testing.F) {
	sealed, _ := mustSeal(f, sample()).MarshalJSON()
	for _, l := range [][]byte{
		decideLine("c1", "t1", `{"decision":"allow"}`),
		decideLine("c1", "t1", `{"decision":"deny","reason":"no"}`),
		decideLine("c1", "t1", `{"decision":"replace","input":{"command":"ls"}}`),
		decideLine("c1", "t1", `{"decision":"replace","input":[1]}`),
		decideLine("c1", "t2", `{"decision":"abstain"}`),
		decideLine("c1", "t9", `{"decision":"allow"}`),
		commandLine("c2", "frame.set", `"frame":`+string(sealed)),
		commandLine("c2", "frame.set", `"frame":{"format":"metaharness.frame/1"}`),
		commandLine("c3", "interrupt", `"reason":"stop"`),
		commandLine("c4", "halt", ""),
		commandLine("c5", "message.inject", `"text":"hi"`),
		commandLine("c6", "steer", `"text":"left"`),
		commandLine("c7", "permission.set", `"posture":"plan"`),
		commandLine("c8", "pause", ""),
		commandLine("c9", "halt", `"command":"tool.decide","call_id":"t1","decision":{"decision":"allow"}`),
		commandLine("c10", "tool.decide", `"call_id":"t1","Call_ID":"t2","decision":{"decision":"allow","Decision":"deny"}`),
		commandLine("c11", "tool.decide", `"call_id":"t1","decision":{"decision":"allow"},"scope":"all"`),
		commandLine("c12", "frame.set", `"frame":{"format":"metaharness.frame/1","operations":[],"operations":[{"op":"shell"}]}`),
		[]byte(`{"format":"metaharness.command/1","command":"halt"}`),
		[]byte(`not json`),
		[]byte(``),
	} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r := newRig(t, Config{Mode: ModeAsk, Control: func(record.Command) error { return nil }})
		answers := 0
		r.e.Request(Call{CallID: "t1", Name: "shell", Input: json.RawMessage(`{"command":"ls"}`), Seam: record.SeamHook}, func(record.Decision) { answers++ })
		r.e.Request(Call{CallID: "t2", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
		if err := r.e.HandleLine(decideLine("c0", "t2", `{"decision":"allow"}`)); err != nil {
			t.Fatal(err)
		}
		before := len(r.lines(t))
		if err := r.e.HandleLine(line); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Hour) // any deadline left fires
		if answers != 1 {
			t.Fatalf("t1 was answered %d times", answers)
		}
		var results []*record.CommandResult
		for _, l := range r.lines(t)[before:] {
			if cr, ok := l.Event.(*record.CommandResult); ok {
				results = append(results, cr)
			}
		}
		stderr := strings.Count(r.stderr.String(), "\n")
		cl, err := record.ParseCommand(line)
		switch {
		case err == nil || (cl != nil && cl.ID != ""):
			if len(results) != 1 || results[0].ID != cl.ID || stderr != 0 {
				t.Fatalf("%q: %d results (want one under %q), %d stderr lines", line, len(results), cl.ID, stderr)
			}
		case len(bytes.TrimSpace(line)) == 0:
			if len(results) != 0 || stderr != 0 {
				t.Fatalf("a blank line was answered")
			}
		default:
			if len(results) != 0 || stderr != 1 {
				t.Fatalf("%q: %d results, %d stderr lines; want none and one", line, len(results), stderr)
			}
		}
	})
}

// FuzzVerdict: any tool name and subject path a vendor sends gets a verdict
// that is valid on the wire, without panicking.
func FuzzVerdict(f *testing.F) {
	fr := mustSeal(f, sample())
	for _, p := range []string{"src/a.go", "secrets/k", "/etc/passwd", "a/../../b", "./src//x", "", "\x00", "**"} {
		f.Add("Write", p)
	}
	f.Fuzz(func(t *testing.T, tool, path string) {
		for _, op := range []string{"file.write", "file.edit", "shell", "bogus"} {
			v := fr.Verdict(tool, Resolution{Operations: []Operation{{Op: op}}, Subjects: []string{"file:" + path}})
			if err := v.Decision.Validate(); err != nil {
				t.Fatalf("%s %q: %v", op, path, err)
			}
		}
	})
}
