package traceir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"sync"

	"github.com/metaharness/metaharness/record"
)

// RenderHTML renders one run, or two side by side, as one self-contained
// static page: each run's header, the tool calls with their decisions and
// results, the timeline of events, and the attestation's rows. Two runs are
// aligned by their step.entered sequence when both were driven through
// steps (calls aligned by index within each step), else by tool-call index;
// a call or step with no counterpart is an explicit gap, and the first row
// where the runs part is marked.
func RenderHTML(runs ...*Stream) ([]byte, error) {
	if len(runs) == 0 || len(runs) > 2 {
		return nil, fmt.Errorf("a page shows one or two runs, not %d", len(runs))
	}
	p := page{}
	for _, s := range runs {
		p.Runs = append(p.Runs, viewOf(s))
	}
	bySteps := true
	for _, r := range p.Runs {
		bySteps = bySteps && len(r.steps) > 0
	}
	p.BySteps = bySteps && len(p.Runs) == 2
	nSteps := 0
	if p.BySteps {
		nSteps = max(len(p.Runs[0].steps), len(p.Runs[1].steps))
	}
	diverged := false
	mark := func(row *callRow, differ bool) {
		if len(p.Runs) == 2 && !diverged && differ {
			row.FirstDivergence, diverged = true, true
		}
	}
	index := 0
	// Step -1 holds the calls made before any step.entered (all of them
	// when the runs are not aligned by step).
	for step := -1; step < nSteps; step++ {
		if step >= 0 {
			row := callRow{}
			for _, r := range p.Runs {
				label := "no counterpart"
				if step < len(r.steps) {
					label = r.steps[step]
				}
				row.Step = append(row.Step, label)
			}
			mark(&row, row.Step[0] != row.Step[1])
			p.Calls = append(p.Calls, row)
		}
		var cols [][]call
		for _, r := range p.Runs {
			cols = append(cols, r.callsIn(step, p.BySteps))
		}
		n := 0
		for _, c := range cols {
			n = max(n, len(c))
		}
		for i := 0; i < n; i++ {
			index++
			row := callRow{Index: index}
			for _, c := range cols {
				if i < len(c) {
					row.Cells = append(row.Cells, &c[i])
				} else {
					row.Cells = append(row.Cells, nil)
				}
			}
			mark(&row, len(row.Cells) == 2 && !sameCall(row.Cells[0], row.Cells[1]))
			p.Calls = append(p.Calls, row)
		}
	}
	var b bytes.Buffer
	if err := pageTemplate().Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type page struct {
	Runs    []runView
	Calls   []callRow
	BySteps bool
}

type runView struct {
	Name, Run, Adapter, Version, Model, Stream, Census string
	Timeline                                           []timelineRow
	Rows                                               []attestRow
	Ambient                                            []string
	calls                                              []call
	steps                                              []string // each step.entered, in order
}

// callsIn is the run's calls made in its step-th step (-1: before any), or
// all of them when the page is not aligned by step.
func (v runView) callsIn(step int, bySteps bool) []call {
	if !bySteps {
		if step == -1 {
			return v.calls
		}
		return nil
	}
	var out []call
	for _, c := range v.calls {
		if c.step == step {
			out = append(out, c)
		}
	}
	return out
}

type timelineRow struct {
	Seq          uint64
	Name, Detail string
}

type attestRow struct{ Row, State, Text string }

type call struct {
	Name, Input, Decision, Result string
	Denied                        bool
	step                          int // the step it was made in, -1 before any
}

// callRow is a step's header row (Step set) or one call per run.
type callRow struct {
	Index           int
	Step            []string
	Cells           []*call
	FirstDivergence bool
}

func sameCall(a, b *call) bool {
	return a != nil && b != nil && a.Name == b.Name && a.Decision == b.Decision
}

func viewOf(s *Stream) runView {
	v := runView{Name: s.Name, Adapter: "?", Version: "?", Model: "?", Census: "not recorded"}
	c := record.CheckCompleteness(s.Lines)
	v.Stream = c.State
	if c.Detail != "" {
		v.Stream += ": " + c.Detail
	}
	byCall := map[string]int{}
	for _, l := range s.Lines {
		v.Run = l.Run
		v.Timeline = append(v.Timeline, timelineRow{Seq: l.Seq, Name: l.Name(), Detail: clip(detailOf(l.Event), 160)})
		switch e := l.Event.(type) {
		case *record.SessionStarted:
			v.Adapter, v.Version, v.Model = e.Adapter, deref(e.HarnessVersion), deref(e.Model)
			if h := e.Hermetic; h != nil {
				for _, r := range h.Imposed {
					v.Rows = append(v.Rows, attestRow{strings.ToUpper(r.Row), "imposed", r.How})
				}
				for _, r := range h.Declared {
					v.Rows = append(v.Rows, attestRow{strings.ToUpper(r.Row), "declared", r.What})
				}
				for _, r := range h.Unavailable {
					v.Rows = append(v.Rows, attestRow{strings.ToUpper(r.Row), "unavailable", r.Why})
				}
				v.Ambient = h.AmbientInputs
			}
		case *record.SessionEnded:
			if e.Census != nil {
				v.Census = fmt.Sprintf("allowed=%d denied=%d replaced=%d abstained=%d", e.Census.Allowed, e.Census.Denied, e.Census.Replaced, e.Census.Abstained)
			}
		case *record.ToolRequested:
			if _, seen := byCall[e.CallID]; seen {
				continue // the vendor's record and the seam present one call twice
			}
			byCall[e.CallID] = len(v.calls)
			v.calls = append(v.calls, call{Name: e.Name, Input: clip(string(e.Input), 200), Decision: "none recorded", Result: "none recorded", step: len(v.steps) - 1})
		case *record.StepEntered:
			v.steps = append(v.steps, fmt.Sprintf("%s/%s #%d, attempt %d", e.Step.Workflow, e.Step.State, e.Step.Index, e.Step.Attempt))
		case *record.ToolDecided:
			if i, ok := byCall[e.CallID]; ok {
				d := e.Decision.Decision + " by " + e.DecidedBy
				if e.Decision.Reason != "" {
					d += ": " + e.Decision.Reason
				}
				v.calls[i].Decision, v.calls[i].Denied = d, e.Decision.Decision == record.Deny
			}
		case *record.ToolResult:
			if i, ok := byCall[e.CallID]; ok {
				r := clip(contentText(e.Content), 200)
				if e.IsError != nil && *e.IsError {
					r = "error: " + r
				}
				v.calls[i].Result = r
			}
		}
	}
	return v
}

func detailOf(ev record.Event) string {
	switch e := ev.(type) {
	case *record.Text:
		return e.Text
	case *record.Thinking:
		return e.Text
	case *record.ToolRequested:
		return e.Name + " " + string(e.Input)
	case *record.ToolDecided:
		return e.Decision.Decision + " by " + e.DecidedBy + " " + e.Decision.Reason
	case *record.Warning:
		return e.Code + ": " + e.Message
	case *record.StreamClosed:
		return fmt.Sprintf("%d event(s) before it, reason %s", e.Events, e.Reason)
	}
	b, _ := record.EncodePayload(ev)
	return string(b)
}

// contentText is a tool result's text: a JSON string as its value, the
// text blocks of a content list joined, anything else as JSON.
func contentText(raw json.RawMessage) string {
	var s string
	if first := bytes.TrimSpace(raw); len(first) > 0 && first[0] != '[' {
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "?"
	}
	return *s
}

// pageTemplate is parsed on first use: only project --html needs it.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageSource))
})

const pageSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>metaharness — {{range $i, $r := .Runs}}{{if $i}} vs {{end}}{{$r.Run}}{{end}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;text-align:left}
th{background:#f3f3f3}
code{font:12px/1.3 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.deny{background:#fdecea}.gap{background:#f6f6f6;color:#777;font-style:italic}
tr.diverge td{border-top:3px solid #c62828}.mark{color:#c62828;font-weight:bold}
.runs{display:grid;grid-template-columns:repeat({{len .Runs}},1fr);gap:1em}
</style>
</head>
<body>
<h1>metaharness — {{len .Runs}} run(s)</h1>
<div class="runs">
{{range .Runs}}<section>
<table>
<tr><th>file</th><td><code>{{.Name}}</code></td></tr>
<tr><th>run</th><td>{{.Run}}</td></tr>
<tr><th>adapter</th><td>{{.Adapter}} {{.Version}}</td></tr>
<tr><th>model</th><td>{{.Model}}</td></tr>
<tr><th>stream</th><td>{{.Stream}}</td></tr>
<tr><th>census</th><td>{{.Census}}</td></tr>
</table>
</section>
{{end}}</div>

<h2>Tool calls{{if .BySteps}}, aligned by step{{else if eq (len .Runs) 2}}, aligned by call index{{end}}</h2>
{{if .Calls}}<table>
<tr><th>#</th>{{range .Runs}}<th>{{.Run}}</th>{{end}}</tr>
{{range .Calls}}<tr{{if .FirstDivergence}} class="diverge"{{end}}>{{if .Step}}<td>step{{if .FirstDivergence}} <span class="mark">first divergence</span>{{end}}</td>{{range .Step}}<th>{{.}}</th>{{end}}{{else}}<td>{{.Index}}{{if .FirstDivergence}} <span class="mark">first divergence</span>{{end}}</td>{{range .Cells}}{{if .}}<td{{if .Denied}} class="deny"{{end}}><b>{{.Name}}</b> <code>{{.Input}}</code><br>decision: {{.Decision}}<br>result: <code>{{.Result}}</code></td>{{else}}<td class="gap">no counterpart</td>{{end}}{{end}}{{end}}</tr>
{{end}}</table>
{{else}}<p>No tool call was requested.</p>
{{end}}
<h2>Attestation</h2>
<div class="runs">
{{range .Runs}}<section>
{{if .Rows}}<table>
<tr><th>row</th><th>state</th><th>how, why or what</th></tr>
{{range .Rows}}<tr><td>{{.Row}}</td><td>{{.State}}</td><td>{{.Text}}</td></tr>
{{end}}</table>
{{else}}<p>No attestation in this stream.</p>
{{end}}{{range .Ambient}}<p>ambient: {{.}}</p>
{{end}}</section>
{{end}}</div>

<h2>Timeline</h2>
<div class="runs">
{{range .Runs}}<section>
<table>
<tr><th>seq</th><th>event</th><th>detail</th></tr>
{{range .Timeline}}<tr><td>{{.Seq}}</td><td>{{.Name}}</td><td><code>{{.Detail}}</code></td></tr>
{{end}}</table>
</section>
{{end}}</div>
</body>
</html>
`
