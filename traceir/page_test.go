package traceir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/record"
)

// pageRun is one run of a page case: its stream and, when the run wrote
// one, its attestation document.
type pageRun struct{ events, doc string }

// pageCases are the project's own test streams as pages: attest's golden
// cases (each a stream and the attestation its run wrote) and this
// package's streams of governed runs. forged-request-throttled is a run of
// the stand-in claude (testkit/fakevendor/fakeclaude) through the loopback
// proxy to the scripted model (testkit/scriptedmodel), confined, with
// --credentials loopback --decisions observe --audit --scratch-cwd
// --records-dir: the model's first answer is a 429 the proxy waits out,
// the stand-in puts a Bash call the model never made to the hook (denied
// at once, DECISION_NOT_ON_WIRE) and claims it in its record
// (RECORD_NOT_ON_WIRE), then reads the file the model asks for; H13 is a
// gap, exit 1.
var pageCases = []struct {
	name string
	runs []pageRun
}{
	{"clean", []pageRun{attestCase("strict_clean_claude")}},
	{"denied", []pageRun{{events: "testdata/streams/governed-run.jsonl"}}},
	{"forged", []pageRun{attestCase("strict_forged_record_gap")}},
	{"forged-request", []pageRun{{"testdata/streams/forged-request-throttled.jsonl", "testdata/streams/forged-request-throttled.attestation.json"}}},
	{"truncated", []pageRun{attestCase("truncated_withheld_abstained")}},
	{"unaudited", []pageRun{attestCase("unaudited_cwd_gap_never_1")}},
	{"clean-vs-forged", []pageRun{attestCase("strict_clean_claude"), attestCase("strict_forged_record_gap")}},
	{"governed-vs-truncated", []pageRun{{events: "testdata/streams/governed-run.jsonl"}, {events: "testdata/streams/truncated-run.jsonl"}}},
}

// pageCase is the runs of the case named name.
func pageCase(t testing.TB, name string) []pageRun {
	for _, c := range pageCases {
		if c.name == name {
			return c.runs
		}
	}
	t.Fatalf("no page case %s", name)
	return nil
}

func attestCase(name string) pageRun {
	dir := filepath.Join("..", "attest", "testdata", "golden", name)
	return pageRun{filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "document.json")}
}

// pageRuns reads a case's runs.
func pageRuns(t testing.TB, runs []pageRun) []Run {
	t.Helper()
	var out []Run
	for _, r := range runs {
		data, err := os.ReadFile(r.events)
		if err != nil {
			t.Fatal(err)
		}
		run := Run{Stream: StreamOf(r.events, data)}
		if r.doc != "" {
			b, err := os.ReadFile(r.doc)
			if err != nil {
				t.Fatal(err)
			}
			if run.Attestation, err = ReadAttestation(r.doc, b); err != nil {
				t.Fatal(err)
			}
			run.AttestationName = r.doc
		}
		out = append(out, run)
	}
	return out
}

func renderRuns(t testing.TB, runs ...Run) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := RenderHTML(&b, runs...); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoldenPages pins each case's page byte for byte (a page has no
// clock: the same runs give the same bytes), and holds every page to what
// makes it one file that works anywhere: nothing it loads, a policy that
// forbids loading, and the one script the policy admits by its digest.
func TestGoldenPages(t *testing.T) {
	for _, c := range pageCases {
		t.Run(c.name, func(t *testing.T) {
			runs := pageRuns(t, c.runs)
			page := renderRuns(t, runs...)
			if again := renderRuns(t, pageRuns(t, c.runs)...); !bytes.Equal(page, again) {
				t.Fatal("two renderings of one case differ")
			}
			golden(t, filepath.Join("testdata", "golden", "page-"+c.name+".html"), page)
			html := string(page)
			for _, bad := range []string{"src=", "<link rel=\"stylesheet\"", "@import", "url(", "http://", "https://"} {
				if strings.Contains(html, bad) {
					t.Errorf("the page holds %q: it must load nothing", bad)
				}
			}
			if !strings.Contains(html, `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;`) {
				t.Error("the page has no policy forbidding loads")
			}
			if n := strings.Count(html, "<script"); n != 1 {
				t.Errorf("%d scripts, want the page's one", n)
			}
		})
	}
	if err := RenderHTML(bytes.NewBuffer(nil)); err == nil {
		t.Error("a page of no run was rendered")
	}
}

// TestPageStatesWhatTheAttestationSays: the banner's facts and the rows
// come from the attestation document when there is one, and say so when
// there is none.
func TestPageStatesWhatTheAttestationSays(t *testing.T) {
	page := func(name string) string { return string(renderRuns(t, pageRuns(t, pageCase(t, name))...)) }
	for _, c := range []struct {
		name string
		want []string
	}{
		{"clean", []string{`data-verdict="ok"`, `audit verdict ok (exit 0)`, `<dd data-fact="exit code">0: it ran and every gating verdict is ok`}},
		{"forged", []string{`data-verdict="gap"`, `audit verdict gap (exit 1)`, `<li data-row="H13"><span class="badge s-gap"><span aria-hidden="true">✖</span> gap</span> <strong>H13</strong> the record matches the wire (gating)</li>`,
			`<span class="badge w-wire">not on the wire</span> <code>RECORD_NOT_ON_WIRE</code>`, `data-decision="denied"`}},
		{"truncated", []string{`data-verdict="unk"`, `audit verdict no verdict (exit 3)`, `The stream is truncated: no stream.closed marker after 6 line(s).`, `<dd data-fact="decision census">allowed 0 · denied 0 · replaced 0 · abstained 2`}},
		{"unaudited", []string{`not audited: control verdict gap, exit 0`, `data-verdict="gap"`}},
		{"denied", []string{`data-verdict="none"`, `not verified`, `no attestation document was given, so its rows are metaharness&#39;s own claim`, `data-decision="denied"`, `<dd data-fact="decision census">allowed 1 · denied 1`}},
	} {
		html := page(c.name)
		for _, w := range c.want {
			if !strings.Contains(html, w) {
				t.Errorf("%s: the page lacks %q", c.name, w)
			}
		}
	}
}

// TestPageEscapesWhatTheModelSaid: text from the run is data, never markup.
func TestPageEscapesWhatTheModelSaid(t *testing.T) {
	var b bytes.Buffer
	w := record.NewWriter(&b, "r")
	_ = w.Emit(&record.Text{Text: `<script>alert(1)</script>`})
	_ = w.Emit(&record.ToolRequested{CallID: "c", Name: `<img src=x onerror=alert(1)>`, Input: []byte(`{"a":"</pre><script>alert(2)</script>"}`), Seam: "hook"})
	_ = w.Close(record.ReasonCompleted, nil)
	page := string(renderRuns(t, Run{Stream: StreamOf("x", b.Bytes())}))
	for _, bad := range []string{"<script>alert", "<img src=x", "</pre><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the run's text reached the page as markup: %q", bad)
		}
	}
}

// TestPageAlignsDrivenRunsByStep: two runs driven through steps line up
// step by step, calls by their order within a step; a step where they
// part is the first divergence, and a call with no counterpart is a gap.
func TestPageAlignsDrivenRunsByStep(t *testing.T) {
	stream := func(run string, steps map[string][]string, order ...string) Run {
		var b bytes.Buffer
		w := record.NewWriter(&b, run)
		n := 0
		for i, st := range order {
			_ = w.Emit(&record.StepEntered{Step: record.StepRef{Workflow: "w", State: st, Index: uint32(i + 1), Attempt: 1}})
			for _, name := range steps[st] {
				n++
				_ = w.Emit(&record.ToolRequested{CallID: fmt.Sprint(n), Name: name, Input: []byte(`{}`), Seam: "hook"})
			}
		}
		_ = w.Close(record.ReasonCompleted, nil)
		return Run{Stream: StreamOf(run, b.Bytes())}
	}
	a := stream("a", map[string][]string{"plan": {"Read"}, "edit": {"Write"}}, "plan", "edit")
	b := stream("b", map[string][]string{"plan": {"Read"}, "test": {"Bash", "Bash"}}, "plan", "test")
	html := string(renderRuns(t, a, b))
	for _, want := range []string{
		"Tool calls, aligned by step",
		`<tr class="header"><th scope="row">step</th><th scope="col">w/plan #1, attempt 1</th><th scope="col">w/plan #1, attempt 1</th><td></td></tr>`,
		`<tr class="header diverge"><th scope="row">step <span class="mark">first divergence</span></th><th scope="col">w/edit #2, attempt 1</th><th scope="col">w/test #2, attempt 1</th><td><b>≠</b> the runs part here</td></tr>`,
		`<td class="gap">no counterpart</td><td id="r1-call-3"`,
		`<td class="difference"><b aria-hidden="true">≠</b> another tool</td>`,
		`<td class="difference"><b aria-hidden="true">≠</b> only in the second run</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(html, "first divergence</span>"); n != 1 {
		t.Errorf("%d first-divergence marks, want 1", n)
	}
}

// TestPageAlignsRunsByTurn: runs that record turns line up turn by turn;
// a turn one run took further is marked, and the calls within it.
func TestPageAlignsRunsByTurn(t *testing.T) {
	stream := func(run string, turns ...[]string) Run {
		var b bytes.Buffer
		w := record.NewWriter(&b, run)
		n := 0
		for i, calls := range turns {
			_ = w.Emit(&record.TurnStarted{Turn: uint32(i + 1)})
			for _, call := range calls {
				n++
				name, dec, _ := strings.Cut(call, ":")
				id := fmt.Sprint(n)
				_ = w.Emit(&record.ToolRequested{CallID: id, Name: name, Input: []byte(`{}`), Seam: "hook"})
				d := record.AllowDecision()
				if dec == "deny" {
					d = record.DenyDecision("not here")
				}
				_ = w.Emit(&record.ToolDecided{CallID: id, Decision: d, DecidedBy: "frame", Seam: "hook"})
			}
			_ = w.Emit(&record.TurnEnded{Turn: uint32(i + 1)})
		}
		_ = w.Close(record.ReasonCompleted, nil)
		return Run{Stream: StreamOf(run, b.Bytes())}
	}
	a := stream("a", []string{"Read", "Bash:deny"}, []string{"Read"})
	b := stream("b", []string{"Read", "Bash"}, []string{"Read", "Write"})
	html := string(renderRuns(t, a, b))
	for _, want := range []string{
		"Tool calls, aligned turn by turn",
		`<th scope="col">turn 1</th><th scope="col">turn 1</th>`,
		`<td class="difference"><b aria-hidden="true">≠</b> decision changed</td>`,
		`<td class="difference"><b aria-hidden="true">≠</b> only in the second run</td>`,
		`2 of 4 aligned calls differ: 1 only in the second run, 1 decision changed`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestLongRunIsSummarised: a run of 100,000 events becomes a page of a
// bounded size whose lists are cut with their counts: the calls past the
// bound that were all allowed are counted, not listed, the refused ones
// still listed; the timeline draws counts per slice; the events listed
// are the first and the last, all of them counted.
func TestLongRunIsSummarised(t *testing.T) {
	data, _ := benchStream(t, 100_000, 997)
	page := string(renderRuns(t, Run{Stream: StreamOf("long.jsonl", data)}))
	t.Logf("a stream of %d bytes, a page of %d", len(data), len(page))
	if len(page) > 4<<20 {
		t.Errorf("the page of 100,000 events is %d bytes", len(page))
	}
	calls := strings.Count(page, `<tr class="call`)
	if calls > maxCallRows || calls < headCalls+tailCalls {
		t.Errorf("%d call rows listed", calls)
	}
	lines := bytes.Count(data, []byte("\n"))
	requested := bytes.Count(data, []byte(`"event":"tool.requested"`))
	for _, want := range []string{
		`are not listed one by one (`,
		`calls, drawn as counts per slice of the axis`,
		`class="tl bin l`,
		fmt.Sprintf(`events 1001 to %d are not listed one by one (%d events; the counts above hold them all)`, lines-tailEvents, lines-headEvents-tailEvents),
		fmt.Sprintf(`<tr><th scope="row">tool.requested</th><td>%d</td></tr>`, requested),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Every denied call is listed, however far into the run it is.
	if n := strings.Count(page, `data-decision="denied"`); n != 20 {
		t.Errorf("%d denied calls listed, want the 20 the run made", n)
	}
}
