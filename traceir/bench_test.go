package traceir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/metaharness/metaharness/record"
)

// BenchmarkProject measures project (every line read twice, the document
// written) side by side with the least any projection must do: decode
// each line once into its event and encode it again, with each line's
// event type handed to it for free. It reports each one's throughput over
// the stream's bytes and their ratio; scripts/bench prints them.
func BenchmarkProject(b *testing.B) {
	data, events := benchStream(b, 20000, 0)
	lines := bytes.SplitAfter(data, []byte("\n"))
	var took [2]time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := Project(io.Discard, StreamOf("bench", data), Source{Format: record.EventFormat}); err != nil {
			b.Fatal(err)
		}
		took[0] += time.Since(t0)

		t0 = time.Now()
		for i, ev := range events {
			v := reflect.New(reflect.TypeOf(ev).Elem()).Interface()
			if err := json.Unmarshal(lines[i], v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
		took[1] += time.Since(t0)
	}
	mb := float64(len(data)) * float64(b.N) / 1e6
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(mb/took[0].Seconds(), "project-MB/s")
	b.ReportMetric(mb/took[1].Seconds(), "plain-MB/s")
	b.ReportMetric(float64(took[0])/float64(took[1]), "ratio")
}

// benchStream is a governed session of n events as the run writes them:
// turns of text, a tool call decided and answered, and usage; with
// denyEvery, every denyEvery-th call is denied instead.
func benchStream(b testing.TB, n, denyEvery int) ([]byte, []record.Event) {
	var buf bytes.Buffer
	w := record.NewWriter(&buf, "claude-bench")
	var events []record.Event
	emit := func(ev record.Event) {
		if err := w.EmitAt("2026-01-02T03:04:05.678Z", ev); err != nil {
			b.Fatal(err)
		}
		events = append(events, ev)
	}
	no := false
	model, size := "claude-bench", uint64(412)
	in, out := uint64(1200), uint64(80)
	started := &record.SessionStarted{Adapter: "claude", AdapterClass: "harness", Model: &model, OfferedTools: []string{"Read", "Bash"}}
	emit(started)
	for i := 0; len(events) < n-2; i++ {
		req := fmt.Sprintf("msg_%06d", i)
		call := fmt.Sprintf("toolu_%06d", i)
		emit(&record.Text{Text: "Reading the notes to see when the release ships, then checking the tests.", RequestID: &req})
		emit(&record.ToolRequested{CallID: call, Name: "Read", Input: json.RawMessage(`{"file_path":"/work/tree/NOTES.md","limit":200}`), Seam: record.SeamHook, DecisionRequired: true})
		if denyEvery > 0 && i%denyEvery == denyEvery-1 {
			emit(&record.ToolDecided{CallID: call, Decision: record.DenyDecision("the frame admits file.read on the tree only"), DecidedBy: "frame", Seam: record.SeamHook})
		} else {
			emit(&record.ToolDecided{CallID: call, Decision: record.AllowDecision(), DecidedBy: "frame", Seam: record.SeamHook})
			emit(&record.ToolResult{CallID: call, IsError: &no, Content: json.RawMessage(`"# Release notes\nThe release ships on Friday.\nAll tests pass on main; the flaky one is quarantined.\n"`), Bytes: &size})
		}
		emit(&record.UsageEvent{RequestID: &req, Model: &model, Usage: record.Usage{InputTokens: &in, OutputTokens: &out}})
	}
	final := "It ships on Friday."
	emit(&record.SessionEnded{IsError: &no, FinalAnswer: &record.FinalAnswer{Text: final}})
	if err := w.Close(record.ReasonCompleted, nil); err != nil {
		b.Fatal(err)
	}
	events = append(events, &record.StreamClosed{})
	return buf.Bytes(), events
}
