package attest

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/record"
)

// TestTapEvaluatesLikeTheRecordedStream: a Tap beside the run's stdout
// gives the same report as reading the stream back from a file.
func TestTapEvaluatesLikeTheRecordedStream(t *testing.T) {
	var out bytes.Buffer
	tap := &Tap{}
	w := record.NewWriter(io.MultiWriter(&out, tap), "r1")
	for _, ev := range []record.Event{
		cleanStarted(),
		&record.ToolRequested{CallID: "c1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Seam: "hook"},
		&record.ToolDecided{CallID: "c1", Decision: record.AllowDecision(), DecidedBy: "frame", Seam: "hook"},
		&record.Text{Text: strings.Repeat("long text ", 1000)},
		&record.Warning{Code: EgressRefused, Message: "CONNECT example.com:443"},
		ended(),
	} {
		if err := w.Emit(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(record.ReasonCompleted, &record.Process{Kind: "exited", Code: ip(0)}); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ReadStream(&out)
	if err != nil {
		t.Fatal(err)
	}
	if err := tap.Err(); err != nil {
		t.Fatal(err)
	}
	l := cleanLaunch()
	want := Evaluate(fromFile, l).Report(nil, nil)
	got := tap.Evaluate(l).Report(nil, nil)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report from the tap differs (-file +tap):\n%s", d)
	}
	if !strings.Contains(got, "stream: complete — 6 event(s)") || !strings.Contains(got, "CONNECT example.com:443") {
		t.Errorf("report:\n%s", got)
	}
}

func TestTapTakesPartialLinesAndNamesABadOne(t *testing.T) {
	tap := &Tap{}
	line := `{"format":"metaharness.event/1","seq":1,"run":"r","event":"warning","code":"X","message":"m"}` + "\n"
	for _, chunk := range []string{line[:10], line[10:], "\n", "not json\n", line[:5]} {
		if n, err := tap.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := tap.Evaluate(cleanLaunch()).Stream.Detail; got != "no stream.closed marker after 2 line(s)" {
		t.Fatalf("the tap counts its lines as %q, want the good and the bad one", got)
	}
	if err := tap.Err(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Err = %v, want one naming line 2", err)
	}
}

func TestReadStreamNamesTheBadLine(t *testing.T) {
	in := `{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"x","request_id":null}` + "\n\n" +
		`{"format":"metaharness.event/1","seq":2,"run":"r","event":"no.such"}` + "\n"
	if _, err := ReadStream(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("err = %v, want one naming line 3", err)
	}
}

func TestNoAuditorRunsNothing(t *testing.T) {
	var a *Auditor
	if res, err := a.Run(t.Context(), "/t", nil); res != nil || err != nil {
		t.Errorf("Run on no auditor = %v, %v; want nothing", res, err)
	}
}

// TestTapHoldsNoLine: the live heap of a tap that has read 20,000 events
// is about that of one that has read 2,000 (the tap once kept every line,
// some 150 bytes each beyond its payload).
func TestTapHoldsNoLine(t *testing.T) {
	live := func(n int) uint64 {
		tap := &Tap{}
		w := record.NewWriter(tap, "r1")
		for i := range n {
			call := "c" + strings.Repeat("x", i%7)
			for _, ev := range []record.Event{
				&record.Text{Text: "reading the notes to see when the release ships"},
				&record.ToolRequested{CallID: call, Name: "Read", Input: json.RawMessage(`{"file_path":"NOTES.md"}`), Seam: "hook"},
				&record.ToolDecided{CallID: call, Decision: record.AllowDecision(), DecidedBy: "frame", Seam: "hook"},
			} {
				if err := w.Emit(ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		runtime.KeepAlive(tap)
		return m.HeapAlloc
	}
	small, large := live(700), live(7000)
	if large > small && (large-small)/18900 > 16 {
		t.Errorf("the tap's live heap grew by %d bytes per event (%d, then %d)", (large-small)/18900, small, large)
	}
}
