package traceir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"

	"github.com/metaharness/metaharness/record"
)

// RenderHTML writes one run, or two side by side, to w as one
// self-contained static page: each run's header, the tool calls with their
// decisions and results, the attestation's rows, and the timeline of
// events. Two runs are aligned by their step.entered sequence when both
// were driven through steps (calls aligned by index within each step), else
// by tool-call index; a call or step with no counterpart is an explicit gap,
// and the first row where the runs part is marked.
//
// Each run is read in two passes and never held: the first gathers its
// header, its attestation, its steps and where each tool call's request,
// decision and result lie in it; the page's rows are then written as they
// are made, each call's lines read again, and the timeline as the second
// pass reads the stream. What grows with a run is an entry per tool call
// (its three lines' places, and its id while the first pass reads) and per
// step (its label): the calls table is aligned across both runs, and a
// call's decision and result may come anywhere after it.
func RenderHTML(w io.Writer, runs ...*Stream) error {
	if len(runs) == 0 || len(runs) > 2 {
		return fmt.Errorf("a page shows one or two runs, not %d", len(runs))
	}
	p := page{}
	for _, s := range runs {
		v, err := viewOf(s)
		if err != nil {
			return err
		}
		p.Runs = append(p.Runs, v)
	}
	bySteps := true
	for _, r := range p.Runs {
		bySteps = bySteps && len(r.steps) > 0
	}
	p.BySteps = bySteps && len(p.Runs) == 2
	nSteps, calls := 0, 0
	if p.BySteps {
		nSteps = max(len(p.Runs[0].steps), len(p.Runs[1].steps))
	}
	for _, r := range p.Runs {
		calls += len(r.calls)
	}
	p.HasCalls = nSteps > 0 || calls > 0
	out := bufio.NewWriterSize(w, 64<<10)
	t := pageTemplate()
	if err := t.ExecuteTemplate(out, "head", p); err != nil {
		return err
	}
	if err := writeCalls(out, t, &p, nSteps); err != nil {
		return err
	}
	if err := t.ExecuteTemplate(out, "middle", p); err != nil {
		return err
	}
	for _, r := range p.Runs {
		if err := writeTimeline(out, t, r); err != nil {
			return err
		}
	}
	if err := t.ExecuteTemplate(out, "tail", p); err != nil {
		return err
	}
	return out.Flush()
}

// writeCalls writes the calls table's rows, aligned as RenderHTML says.
func writeCalls(out io.Writer, t *template.Template, p *page, nSteps int) error {
	diverged := false
	row := func(r callRow, differ bool) error {
		if len(p.Runs) == 2 && !diverged && differ {
			r.FirstDivergence, diverged = true, true
		}
		return t.ExecuteTemplate(out, "call", r)
	}
	next := make([]int, len(p.Runs)) // each run's first call not yet shown
	index := 0
	// Step -1 holds the calls made before any step.entered (all of them
	// when the runs are not aligned by step).
	for step := -1; step < nSteps; step++ {
		if step >= 0 {
			r := callRow{}
			for _, v := range p.Runs {
				label := "no counterpart"
				if step < len(v.steps) {
					label = v.steps[step]
				}
				r.Step = append(r.Step, label)
			}
			if err := row(r, r.Step[0] != r.Step[1]); err != nil {
				return err
			}
		}
		var cols [][]callRef
		n := 0
		for i, v := range p.Runs {
			end := next[i]
			for end < len(v.calls) && (!p.BySteps || v.calls[end].step == step) {
				end++
			}
			cols = append(cols, v.calls[next[i]:end])
			next[i] = end
			n = max(n, len(cols[i]))
		}
		for i := 0; i < n; i++ {
			index++
			r := callRow{Index: index}
			for k, c := range cols {
				if i >= len(c) {
					r.Cells = append(r.Cells, nil)
					continue
				}
				cell, err := p.Runs[k].call(c[i])
				if err != nil {
					return err
				}
				r.Cells = append(r.Cells, cell)
			}
			if err := row(r, len(r.Cells) == 2 && !sameCall(r.Cells[0], r.Cells[1])); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTimeline writes a run's timeline as the second pass reads it.
func writeTimeline(out io.Writer, t *template.Template, v *runView) error {
	if err := t.ExecuteTemplate(out, "timelineHead", nil); err != nil {
		return err
	}
	h := newDigest()
	n, err := v.s.events(h, false, func(p *parsedLine) error {
		l := p.l
		return t.ExecuteTemplate(out, "event", timelineRow{Seq: l.Seq, Name: l.Name(), Detail: clip(detailOf(l.Event), 160)})
	})
	if err != nil {
		return err
	}
	if n != v.lines || digestOf(h) != v.digest {
		return v.s.changed(fmt.Sprintf("%d lines, then %d", v.lines, n))
	}
	return t.ExecuteTemplate(out, "timelineTail", nil)
}

type page struct {
	Runs     []*runView
	BySteps  bool
	HasCalls bool
}

type runView struct {
	Name, Run, Adapter, Version, Model, Stream, Census string
	Rows                                               []attestRow
	Ambient                                            []string
	s                                                  *Stream
	digest                                             string
	lines                                              int
	calls                                              []callRef // in the order they were requested
	steps                                              []string  // each step.entered, in order
}

type timelineRow struct {
	Seq          uint64
	Name, Detail string
}

type attestRow struct{ Row, State, Text string }

// callRef is where a tool call lies in its stream: the line that requested
// it, and the last that decided it and that gave its result (n 0: none).
type callRef struct {
	requested, decided, result lineRef
	step                       int // the step it was made in, -1 before any
}

type call struct {
	Name, Input, Decision, Result string
	Denied                        bool
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

// call reads what the page shows of a call from its lines.
func (v *runView) call(r callRef) (*call, error) {
	req, err := eventAt[*record.ToolRequested](v.s, r.requested, "tool.requested")
	if err != nil {
		return nil, err
	}
	c := &call{Name: req.Name, Input: clip(string(req.Input), 200), Decision: "none recorded", Result: "none recorded"}
	if r.decided.n > 0 {
		e, err := eventAt[*record.ToolDecided](v.s, r.decided, "tool.decided")
		if err != nil {
			return nil, err
		}
		c.Decision, c.Denied = e.Decision.Decision+" by "+e.DecidedBy, e.Decision.Decision == record.Deny
		if e.Decision.Reason != "" {
			c.Decision += ": " + e.Decision.Reason
		}
	}
	if r.result.n > 0 {
		e, err := eventAt[*record.ToolResult](v.s, r.result, "tool.result")
		if err != nil {
			return nil, err
		}
		c.Result = clip(contentText(e.Content), 200)
		if e.IsError != nil && *e.IsError {
			c.Result = "error: " + c.Result
		}
	}
	return c, nil
}

// eventAt reads the event an earlier pass found at r again, which must
// still be the name it was.
func eventAt[T record.Event](s *Stream, r lineRef, name string) (T, error) {
	var none T
	l, err := s.lineAt(r.n, r.off, r.size)
	if err != nil {
		return none, err
	}
	e, ok := l.Event.(T)
	if !ok {
		return none, s.changed(fmt.Sprintf("line %d is no longer a %s", r.n, name))
	}
	return e, nil
}

// viewOf is the first pass over a run: everything the page shows of it but
// its calls' text and its timeline.
func viewOf(s *Stream) (*runView, error) {
	v := &runView{Name: s.Name, Adapter: "?", Version: "?", Model: "?", Census: "not recorded", s: s}
	var complete record.CompletenessCheck
	byCall := map[string]int{}
	h := newDigest()
	n, err := s.events(h, false, func(p *parsedLine) error {
		n, off, line, l := p.n, p.off, p.line, p.l
		v.Run = l.Run
		complete.Add(l)
		here := lineRef{n: n, off: off, size: len(line)}
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
				return nil // the vendor's record and the seam present one call twice
			}
			byCall[e.CallID] = len(v.calls)
			v.calls = append(v.calls, callRef{requested: here, step: len(v.steps) - 1})
		case *record.StepEntered:
			v.steps = append(v.steps, fmt.Sprintf("%s/%s #%d, attempt %d", e.Step.Workflow, e.Step.State, e.Step.Index, e.Step.Attempt))
		case *record.ToolDecided:
			if i, ok := byCall[e.CallID]; ok {
				v.calls[i].decided = here
			}
		case *record.ToolResult:
			if i, ok := byCall[e.CallID]; ok {
				v.calls[i].result = here
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.digest, v.lines = digestOf(h), n
	c := complete.Result()
	v.Stream = c.State
	if c.Detail != "" {
		v.Stream += ": " + c.Detail
	}
	return v, nil
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

// pageSource is the page in the pieces RenderHTML writes in turn: head,
// a call row per call (and per step), middle, per run a timeline's head, an
// event row per event and its tail, and the tail.
const pageSource = `{{define "head"}}<!DOCTYPE html>
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
{{if .HasCalls}}<table>
<tr><th>#</th>{{range .Runs}}<th>{{.Run}}</th>{{end}}</tr>
{{end}}{{end}}{{define "call"}}<tr{{if .FirstDivergence}} class="diverge"{{end}}>{{if .Step}}<td>step{{if .FirstDivergence}} <span class="mark">first divergence</span>{{end}}</td>{{range .Step}}<th>{{.}}</th>{{end}}{{else}}<td>{{.Index}}{{if .FirstDivergence}} <span class="mark">first divergence</span>{{end}}</td>{{range .Cells}}{{if .}}<td{{if .Denied}} class="deny"{{end}}><b>{{.Name}}</b> <code>{{.Input}}</code><br>decision: {{.Decision}}<br>result: <code>{{.Result}}</code></td>{{else}}<td class="gap">no counterpart</td>{{end}}{{end}}{{end}}</tr>
{{end}}{{define "middle"}}{{if .HasCalls}}</table>
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
{{end}}{{define "timelineHead"}}<section>
<table>
<tr><th>seq</th><th>event</th><th>detail</th></tr>
{{end}}{{define "event"}}<tr><td>{{.Seq}}</td><td>{{.Name}}</td><td><code>{{.Detail}}</code></td></tr>
{{end}}{{define "timelineTail"}}</table>
</section>
{{end}}{{define "tail"}}</div>
</body>
</html>
{{end}}`
