package traceir

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

var update = flag.Bool("update", false, "rewrite the golden documents and pages from what the code produces")

func project(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Project(&out, StreamOf(path, data), Source{Format: record.EventFormat}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code produces now; review, then -update", path)
	}
}

// TestGoldenDocuments pins each stream's document byte for byte, and shows
// that projecting twice gives the same bytes.
func TestGoldenDocuments(t *testing.T) {
	streams, _ := filepath.Glob("testdata/streams/*.jsonl")
	if len(streams) == 0 {
		t.Fatal("no streams")
	}
	for _, p := range streams {
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		t.Run(name, func(t *testing.T) {
			got := project(t, p)
			if again := project(t, p); !bytes.Equal(got, again) {
				t.Fatal("two projections of one stream differ")
			}
			if !json.Valid(got) || !bytes.HasSuffix(got, []byte("}\n")) {
				t.Fatal("the document is not one JSON value ending in a newline")
			}
			golden(t, filepath.Join("testdata", "golden", name+".trace-ir.json"), got)
		})
	}
}

// TestDocumentShape checks the rules the golden files could hide: families,
// unk for control-plane events, metaharness-only facts kept out of the
// events, requests and their event indices, timestamps, completeness.
func TestDocumentShape(t *testing.T) {
	var d struct {
		Events []struct {
			Index       int     `json:"index"`
			SourceLine  int     `json:"source_line"`
			Timestamp   *string `json:"timestamp"`
			TimestampMS *int64  `json:"timestamp_ms"`
			Kind        map[string]json.RawMessage
		}
		Requests []struct {
			RequestID string `json:"request_id"`
			Events    []int
		}
		Metaharness struct {
			Families       map[string]int
			UnkKinds       map[string]int `json:"unk_kinds"`
			Hermetic       json.RawMessage
			Census         json.RawMessage
			StreamComplete bool `json:"stream_complete"`
		}
	}
	if err := json.Unmarshal(project(t, "testdata/streams/governed-run.jsonl"), &d); err != nil {
		t.Fatal(err)
	}
	kind := func(i int) string { var s string; _ = json.Unmarshal(d.Events[i].Kind["event"], &s); return s }
	if kind(0) != "session_start" || d.Events[0].Kind["hermetic"] != nil || d.Events[0].Kind["withheld"] != nil {
		t.Errorf("event 0 is %s and keeps metaharness-only keys: %v", kind(0), d.Events[0].Kind)
	}
	if string(d.Metaharness.Hermetic) == "null" || string(d.Metaharness.Census) == "null" {
		t.Error("the attestation or the census is missing under metaharness")
	}
	if kind(6) != "unk" || string(d.Events[6].Kind["event_kind"]) != `"tool.decided"` || d.Events[6].Kind["payload"] == nil {
		t.Errorf("tool.decided is not carried as unk with its payload: %v", d.Events[6].Kind)
	}
	if d.Metaharness.UnkKinds["tool.decided"] != 2 || d.Metaharness.UnkKinds["turn.started"] != 1 {
		t.Errorf("unk kinds %v", d.Metaharness.UnkKinds)
	}
	if len(d.Requests) != 3 || d.Requests[0].RequestID != "msg_0001" || len(d.Requests[0].Events) != 2 {
		t.Errorf("requests %+v, want three, the first carried by the text and the usage", d.Requests)
	}
	for i, e := range d.Events {
		if e.Index != i || e.SourceLine != i+1 {
			t.Errorf("event %d has index %d and source line %d", i, e.Index, e.SourceLine)
		}
	}
	if d.Events[2].Timestamp == nil || d.Events[2].TimestampMS == nil || d.Events[1].TimestampMS != nil {
		t.Error("timestamps are not carried (or invented) as the stream has them")
	}
	if !d.Metaharness.StreamComplete {
		t.Error("a complete stream is not stream_complete")
	}
	var cut struct {
		Metaharness struct {
			StreamComplete bool `json:"stream_complete"`
		}
	}
	_ = json.Unmarshal(project(t, "testdata/streams/truncated-run.jsonl"), &cut)
	if cut.Metaharness.StreamComplete {
		t.Error("a stream with no stream.closed is stream_complete")
	}
}

func TestUnreadableLinesAreRefusedByNumber(t *testing.T) {
	good, _ := os.ReadFile("testdata/streams/truncated-run.jsonl")
	lines := strings.SplitAfter(string(good), "\n")
	for _, c := range []struct{ name, data, want string }{
		{"not json on line 3", lines[0] + lines[1] + "{oops\n" + lines[2], "s line 3 is not an event line"},
		{"a blank line", lines[0] + "\n" + lines[1], "s line 2 is blank"},
		{"empty", "", "s holds no event line"},
		{"a command line", `{"format":"metaharness.command/1","id":"1","command":"halt"}` + "\n", "s line 1 is not an event line"},
		// Lines are parsed in batches on several cores: the first fault in
		// the stream's order is the one named, whatever else follows it.
		{"not json on line 700, a blank line at 1500", strings.Repeat(lines[0], 699) + "{oops\n" + strings.Repeat(lines[1], 799) + "\n" + lines[2], "s line 700 is not an event line"},
		{"a blank line at 1500, a bad line at 1501", strings.Repeat(lines[0], 1499) + "\n{oops\n", "s line 1500 is blank"},
	} {
		var out bytes.Buffer
		err := Project(&out, StreamOf("s", []byte(c.data)), Source{Format: record.EventFormat})
		if out.Len() > 0 {
			t.Errorf("%s: a refused projection wrote %q", c.name, out.Bytes())
		}
		var r *exit.Refusal
		if !errors.As(err, &r) || r.Name != RefuseUnreadable || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: %v, want %s naming %q", c.name, err, RefuseUnreadable, c.want)
		}
	}
}

// TestTwoPathsOneDocument: a stream whose lines are not as the writer
// writes them is decoded again on the second pass, a canonical one taken
// from its bytes; both give the same document but for the digest of the
// bytes read.
func TestTwoPathsOneDocument(t *testing.T) {
	streams, _ := filepath.Glob("testdata/streams/*.jsonl")
	for _, p := range streams {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		respelled := bytes.ReplaceAll(data, []byte(`{"format":`), []byte(`{ "format":`))
		var a, b bytes.Buffer
		if err := Project(&a, StreamOf(p, data), Source{Format: record.EventFormat, Digest: "d"}); err != nil {
			t.Fatal(err)
		}
		if err := Project(&b, StreamOf(p, respelled), Source{Format: record.EventFormat, Digest: "d"}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: the decoded and the canonical paths differ", p)
		}
	}
}

// TestLongAndChangedStreamsAreRefused: a line past MaxLineBytes is refused
// by number, and a stream whose bytes change between the two passes is
// refused as changed, not projected from both.
func TestLongAndChangedStreamsAreRefused(t *testing.T) {
	good, _ := os.ReadFile("testdata/streams/truncated-run.jsonl")
	long := append(append([]byte{}, good...), bytes.Repeat([]byte("x"), MaxLineBytes+1)...)
	err := Project(io.Discard, StreamOf("s", long), Source{Format: record.EventFormat})
	var r *exit.Refusal
	if !errors.As(err, &r) || r.Name != RefuseUnreadable || !strings.Contains(r.Message, "s line 6 is longer than 67108864 bytes (64 MiB)") {
		t.Errorf("a 64 MiB line: %v", err)
	}
	flip := &flipping{a: good, b: bytes.Replace(good, []byte(`"seq":2`), []byte(`"seq":9`), 1)}
	for _, page := range []bool{false, true} {
		flip.reads = 0
		s := NewStream("s", flip, int64(len(good)))
		if page {
			err = RenderHTML(io.Discard, Run{Stream: s})
		} else {
			err = Project(io.Discard, s, Source{Format: record.EventFormat})
		}
		if !errors.As(err, &r) || r.Name != RefuseUnreadable || !strings.Contains(r.Message, "s changed while it was projected") {
			t.Errorf("page %t: a stream that changed between passes: %v", page, err)
		}
	}
}

// flipping serves a until it has been read to its end once, then b.
type flipping struct {
	a, b  []byte
	reads int
}

func (f *flipping) ReadAt(p []byte, off int64) (int, error) {
	data := f.a
	if f.reads > 0 {
		data = f.b
	}
	n, err := bytes.NewReader(data).ReadAt(p, off)
	if off+int64(n) >= int64(len(data)) {
		f.reads++
	}
	return n, err
}

// TestMemoryDoesNotGrowWithTheStream: the heap that stays live while a
// document or a page is written grows with the stream by an index entry per
// model request or tool call, not by the events' bytes: well under 100
// bytes per event between streams of 2,000 and 20,000 events (holding the
// events, as project once did, is some 1,000).
func TestMemoryDoesNotGrowWithTheStream(t *testing.T) {
	live := func(n int, page bool) uint64 {
		data, _ := benchStream(t, n, 0)
		s := StreamOf("s", data)
		w := &heapWatch{}
		w.sample() // the stream itself is live throughout: the baseline
		base := w.peak
		w.peak = 0
		var err error
		if page {
			err = RenderHTML(w, Run{Stream: s})
		} else {
			err = Project(w, s, Source{Format: record.EventFormat})
		}
		if err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(data)
		return w.peak - min(w.peak, base)
	}
	for _, page := range []bool{false, true} {
		small, large := live(2000, page), live(20000, page)
		t.Logf("page %t: live heap %d bytes at 2,000 events, %d at 20,000", page, small, large)
		if per := (int64(large) - int64(small)) / 18000; per > 100 {
			t.Errorf("page %t: the live heap grew %d bytes per event (%d at 2,000 events, %d at 20,000)", page, per, small, large)
		}
	}
}

// heapWatch discards what is written and samples the live heap after a
// collection at every write (the writer flushes every 64 KiB).
type heapWatch struct{ peak uint64 }

func (h *heapWatch) sample() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.peak = max(h.peak, m.HeapAlloc)
}

func (h *heapWatch) Write(p []byte) (int, error) {
	h.sample()
	return len(p), nil
}
