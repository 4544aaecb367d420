package traceir

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/metaharness/metaharness/record"
)

// RenderHTML writes one run, or two side by side, to w as one
// self-contained static page for a reviewer who must sign a run off:
// the verdict first (the audit and control verdicts, the exit code and
// what it means, the kind, vendor version, model, duration and decision
// census, each row that is not ok named), the attestation's rows (gating
// apart from advisory, each state shown by its word, sign, colour and
// border, its reason in a line and the whole sentence one click away), a
// timeline (model requests, turns, tool calls with their decisions,
// warnings) on one axis, the proxy's records of the model requests, the
// warnings, the tool calls (each opening to its input, the decision's
// reason and its result) and the events. Two runs are aligned step by
// step when both were driven through steps, else turn by turn, calls by
// their order within; what differs is named and the first difference
// marked.
//
// The page loads nothing (its Content-Security-Policy forbids it), and
// reads whole with scripts off: its one script only opens a row's
// details when a link leads there, and every details before printing.
//
// Each run is read in two passes and never held: the first gathers what
// the page states before its events (viewOf), the second writes the
// events as it reads them; each call, warning and request the page shows
// is read again from its place. What grows with a run is an entry per
// tool call, turn, model request and warning, a few dozen bytes each;
// past a bound each list is summarised with counts (maxCallRows,
// maxMarks, maxEventRows).
func RenderHTML(w io.Writer, runs ...Run) error {
	if len(runs) == 0 || len(runs) > 2 {
		return fmt.Errorf("a page shows one or two runs, not %d", len(runs))
	}
	var views []*runView
	for _, r := range runs {
		v, err := viewOf(r)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	p, err := pageOf(views)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(w, 64<<10)
	t := pageTemplate()
	if err := t.ExecuteTemplate(out, "head", p); err != nil {
		return err
	}
	if err := writeCalls(out, t, p, views); err != nil {
		return err
	}
	if err := t.ExecuteTemplate(out, "callsTail", p); err != nil {
		return err
	}
	for i, v := range views {
		if err := writePageEvents(out, t, v, runID(i)); err != nil {
			return err
		}
	}
	if err := t.ExecuteTemplate(out, "tail", p); err != nil {
		return err
	}
	return out.Flush()
}

func runID(i int) string { return fmt.Sprintf("r%d", i) }

// page is what the page's head states, made before anything is written.
type page struct {
	Title, Heading string
	CSS            template.CSS
	JS             template.JS
	CSP            string
	Two            bool
	RunNames       []string
	Banners        []banner
	Diff           []diffLine
	RowsNotes      []string
	Gating         rowTable
	Advisory       rowTable
	Ambient        []ambient
	Timelines      []timeline
	Requests       []requestSection
	Warnings       []warningSection
	HasCalls       bool
	AlignedBy      string

	rows []aligned
	by   int
}

type ambient struct{ Run, Text string }

type rowTable struct {
	Which, Caption string
	Runs           []string
	Rows           []pageRow
	Two            bool
}

type diffLine struct {
	What, Text string
	Changed    bool
}

type requestSection struct {
	ID, Run, Note string
	Rows          []requestRow
	Left          int
}

type warningSection struct {
	ID, Run, Counts, Left string
	Rows                  []warnRow
}

type warnRow struct {
	ID, N, At, Kind, Badge, Code, Message, More, Class string
}

func pageOf(views []*runView) (*page, error) {
	p := &page{CSS: template.CSS(pageCSS), JS: template.JS(pageJS), CSP: csp(), Two: len(views) == 2}
	var runs []string
	for i, v := range views {
		id := runID(i)
		runs = append(runs, v.run)
		b := bannerOf(v, id)
		p.Banners = append(p.Banners, b)
		if v.doc == nil {
			p.RowsNotes = append(p.RowsNotes, fmt.Sprintf("%s: no attestation document was given, so its rows are metaharness's own claim from the opening record, not judged; give the run's attestation (--attestation FILE) to see the floor's verdicts.", v.run))
		}
		if v.hermetic != nil {
			for _, a := range v.hermetic.AmbientInputs {
				p.Ambient = append(p.Ambient, ambient{v.run, a})
			}
		}
		p.Requests = append(p.Requests, requestSectionOf(v, id))
		ws, err := warningSectionOf(v, id)
		if err != nil {
			return nil, err
		}
		p.Warnings = append(p.Warnings, ws)
	}
	p.RunNames = runs
	if p.Two && runs[0] == runs[1] {
		// One run's stream twice, or two copies of it: the files tell them apart.
		for i, v := range views {
			p.RunNames[i] = fmt.Sprintf("%s (%s)", v.run, filepath.Base(v.s.Name))
		}
	}
	if p.Two {
		p.Title = fmt.Sprintf("metaharness — %s vs %s", runs[0], runs[1])
		p.Heading = fmt.Sprintf("Runs %s and %s side by side", runs[0], runs[1])
	} else {
		p.Title = fmt.Sprintf("metaharness — %s: %s", runs[0], p.Banners[0].Headline.Word)
		p.Heading = "Run " + runs[0]
	}
	gating, advisory := rowTables(views)
	p.Gating = rowTable{"gating", "Gating rows: a gating row that is not ok moves an audited run's exit code", p.RunNames, gating, p.Two}
	p.Advisory = rowTable{"advisory", "Advisory rows: judged and shown, never moving the exit code", p.RunNames, advisory, p.Two}
	// Two runs timed in milliseconds share one scale, so that the same
	// width is the same time in both.
	span := int64(0)
	for _, v := range views {
		span = max(span, v.to-v.from)
	}
	for i, v := range views {
		s := scale{span: v.to - v.from}
		if p.Two && views[0].byTime && views[1].byTime {
			s.span = span
		}
		tl, err := v.timelineOf(runID(i), s)
		if err != nil {
			return nil, err
		}
		p.Timelines = append(p.Timelines, tl)
	}
	p.rows, p.by = alignment(views)
	p.AlignedBy = [...]string{byOrder: "aligned by the order the calls were made", byTurn: "aligned turn by turn", byStep: "aligned by step"}[p.by]
	p.HasCalls = len(p.rows) > 0
	if p.Two {
		p.Diff = differences(views, p.Banners, p.rows, gating, advisory)
	}
	return p, nil
}

// differences are what a reviewer compares between two runs, each marked
// when it differs.
func differences(views []*runView, banners []banner, rows []aligned, gating, advisory []pageRow) []diffLine {
	var out []diffLine
	add := func(what, a, b string) {
		if a == b {
			out = append(out, diffLine{what, "the same in both: " + a, false})
		} else {
			out = append(out, diffLine{what, a + " → " + b, true})
		}
	}
	fact := func(b banner, key string) string {
		for _, f := range b.Facts {
			if f.Key == key {
				return f.text()
			}
		}
		return "not recorded"
	}
	for _, k := range []string{"audit verdict", "control verdict", "exit code", "stream", "decision census"} {
		add(k, fact(banners[0], k), fact(banners[1], k))
	}
	var changed []string
	for _, r := range append(append([]pageRow{}, gating...), advisory...) {
		if r.Changed {
			a, b := r.Cells[0], r.Cells[1]
			changed = append(changed, fmt.Sprintf("%s %s/%s → %s/%s", r.ID, a.Verdict.Word, a.Claim.Word, b.Verdict.Word, b.Claim.Word))
		}
	}
	if len(changed) == 0 {
		out = append(out, diffLine{"attestation rows", "every row is in the same state in both", false})
	} else {
		out = append(out, diffLine{"attestation rows", fmt.Sprintf("%d changed state: %s", len(changed), strings.Join(changed, "; ")), true})
	}
	n := diffCounts(rows)
	total := 0
	for _, c := range n {
		total += c
	}
	if total == n[same] {
		out = append(out, diffLine{"tool calls", fmt.Sprintf("all %d aligned calls are the same tool with the same decision and input", total), false})
	} else {
		var parts []string
		for _, k := range []diffKind{onlyFirst, onlySecond, otherTool, decisionChanged, inputDiffers} {
			if n[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n[k], diffWords[k]))
			}
		}
		out = append(out, diffLine{"tool calls", fmt.Sprintf("%d of %d aligned calls differ: %s", total-n[same], total, strings.Join(parts, ", ")), true})
	}
	answer := func(v *runView) string {
		if v.ended == nil || v.ended.FinalAnswer == nil {
			return "none"
		}
		return fmt.Sprintf("%q", clip(v.ended.FinalAnswer.Text, 300))
	}
	add("final answer", answer(views[0]), answer(views[1]))
	return out
}

func requestSectionOf(v *runView, id string) requestSection {
	s := requestSection{ID: id, Run: v.run}
	s.Rows, s.Left = requestRows(v, id)
	if len(s.Rows) == 0 {
		switch {
		case v.doc == nil:
			s.Note = fmt.Sprintf("%s: the loopback proxy's records are in the run's attestation document, which was not given; the model requests the stream records are on the timeline.", v.run)
		case v.doc.Loopback == nil:
			s.Note = fmt.Sprintf("%s: the run had no loopback proxy, so no request of its was recorded by metaharness.", v.run)
		default:
			s.Note = fmt.Sprintf("%s: the loopback proxy recorded no request.", v.run)
		}
	}
	return s
}

// warningSectionOf lists v's warnings, as its timeline draws them: all of
// them up to maxMarks, else the ones a reviewer looks for, with every
// code counted.
func warningSectionOf(v *runView, id string) (warningSection, error) {
	s := warningSection{ID: id, Run: v.run}
	draw, summarised := summarise(len(v.warnings), func(i int) bool {
		k := v.warnings[i].kind
		return k != warnOther && k != warnRequest
	})
	codes := map[string]int{}
	for i, m := range v.warnings {
		w, err := eventAt[*record.Warning](v.s, m.ref, "warning")
		if err != nil {
			return s, err
		}
		codes[w.Code]++
		if !draw(i) {
			continue
		}
		one, more := oneLine(w.Message)
		s.Rows = append(s.Rows, warnRow{ID: warnID(id, i), N: fmt.Sprint(i + 1), At: v.at(v.on(m.at)), Kind: warnKinds[m.kind].label,
			Badge: warnKinds[m.kind].class, Code: w.Code, Message: one, More: more, Class: warnKinds[m.kind].class})
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		parts = append(parts, fmt.Sprintf("%s %d", c, codes[c]))
	}
	s.Counts = strings.Join(parts, ", ")
	if summarised {
		s.Left = fmt.Sprintf("%d warnings in all; the %d listed are the forged requests, the lines not on the wire, the throttles and the refused egress among them (at most %d).", len(v.warnings), len(s.Rows), maxMarks)
	}
	return s, nil
}

// callRow is one row of the calls table, as the "call" template writes it.
type callRow struct {
	Skip, Diff    string
	Span          int
	Header, First bool
	One, Turn     bool
	Labels        []string
	Index         int
	TurnLabel     string
	Cells         []*callCell
}

// callCell is one run's call in a row.
type callCell struct {
	ID, Name, By, Took, Input, InputFull, Reason, Decision, Result, Ops string
	Badge                                                               badge
	Asked, Failed, Slowest                                              bool
}

// writeCalls writes the calls table's rows: every aligned row, or on a
// long run the ones listed (listed), with a row counting each stretch
// left out.
func writeCalls(out io.Writer, t *template.Template, p *page, views []*runView) error {
	rows := p.rows
	show := listed(views, rows)
	span := 3
	if p.Two {
		span = 4
	}
	slowest := make([]int, len(views))
	for i, v := range views {
		slowest[i] = v.slowestCall()
	}
	diverged := false
	skipped := []int{}
	flush := func() error {
		if len(skipped) == 0 {
			return nil
		}
		err := t.ExecuteTemplate(out, "call", callRow{Skip: skipLine(views, rows, skipped), Span: span})
		skipped = skipped[:0]
		return err
	}
	for i, r := range rows {
		first := p.Two && !diverged && r.diff != same
		diverged = diverged || first
		if !show(i) && !first {
			skipped = append(skipped, i)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		row := callRow{First: first, One: !p.Two, Index: r.index, Span: span}
		if r.header {
			row.Header, row.Labels, row.Turn = true, r.label, p.by == byTurn
			if r.diff != same {
				row.Diff = "the runs part here"
			}
		} else {
			row.Diff = diffWords[r.diff]
			for k, v := range views {
				c := r.cells[k]
				if c < 0 {
					row.Cells = append(row.Cells, nil)
					continue
				}
				cell, err := v.cell(runID(k), int(c), int(c) == slowest[k])
				if err != nil {
					return err
				}
				row.Cells = append(row.Cells, cell)
			}
			if !p.Two {
				row.TurnLabel = "before any turn"
				if n := views[0].calls[r.cells[0]].turn; n > 0 {
					row.TurnLabel = fmt.Sprintf("turn %d", n)
				}
			}
		}
		if err := t.ExecuteTemplate(out, "call", row); err != nil {
			return err
		}
	}
	return flush()
}

// skipLine counts a stretch of call rows a long page leaves out.
func skipLine(views []*runView, rows []aligned, skipped []int) string {
	first, last := -1, -1
	decisions := make([]map[decision]int, len(views))
	for k := range views {
		decisions[k] = map[decision]int{}
	}
	for _, i := range skipped {
		r := rows[i]
		if r.header {
			continue
		}
		if first < 0 {
			first = r.index
		}
		last = r.index
		for k, v := range views {
			if c := r.cells[k]; c >= 0 {
				decisions[k][v.calls[c].dec]++
			}
		}
	}
	if first < 0 {
		return fmt.Sprintf("%d step or turn headers are not listed", len(skipped))
	}
	var parts []string
	for k, v := range views {
		var ds []string
		for d := undecided; d <= abstained; d++ {
			if n := decisions[k][d]; n > 0 {
				ds = append(ds, fmt.Sprintf("%d %s", n, d))
			}
		}
		parts = append(parts, v.run+": "+strings.Join(ds, ", "))
	}
	return fmt.Sprintf("calls %d to %d are not listed one by one (%d rows; each is the same in both runs and neither refused nor failed): %s",
		first, last, last-first+1, strings.Join(parts, "; "))
}

// cell reads call i of v from its lines.
func (v *runView) cell(id string, i int, slowest bool) (*callCell, error) {
	r := v.calls[i]
	req, err := eventAt[*record.ToolRequested](v.s, r.requested, "tool.requested")
	if err != nil {
		return nil, err
	}
	c := &callCell{ID: callID(id, i), Name: req.Name, Badge: badge{r.dec.String(), r.dec.String()}, Asked: r.asked, Failed: r.failed, Slowest: slowest,
		Input: clip(string(req.Input), 160), InputFull: indentJSON(req.Input, maxShown), Decision: "none recorded", Result: "none recorded"}
	if len(req.Operations) > 0 {
		c.Ops = strings.Join(req.Operations, ", ")
		if len(req.Subjects) > 0 {
			c.Ops += " on " + strings.Join(req.Subjects, ", ")
		}
	}
	if from, to := v.on(r.from), v.on(r.to); v.byTime && to > from {
		c.Took = fmtMS(to - from)
	}
	if r.decided.n > 0 {
		e, err := eventAt[*record.ToolDecided](v.s, r.decided, "tool.decided")
		if err != nil {
			return nil, err
		}
		c.By = "by " + e.DecidedBy
		c.Decision = fmt.Sprintf("%s by %s at the %s seam", e.Decision.Decision, e.DecidedBy, e.Seam)
		if e.LatencyMS != nil {
			c.Decision += fmt.Sprintf(", in %d ms", *e.LatencyMS)
		}
		if e.Decision.Reason != "" {
			c.Decision += ": " + e.Decision.Reason
			c.Reason = clip(e.Decision.Reason, 200)
		}
		if e.Decision.Decision == record.Replace {
			c.Decision += "; run with " + clip(string(e.Decision.Input), maxShown)
		}
	} else {
		c.Reason = "no decision is recorded: the stream ends, or the call's turn closed, before one"
	}
	if r.result.n > 0 {
		e, err := eventAt[*record.ToolResult](v.s, r.result, "tool.result")
		if err != nil {
			return nil, err
		}
		c.Result = clip(contentText(e.Content), maxShown)
		if e.IsError != nil && *e.IsError {
			c.Result = "error: " + c.Result
		}
	}
	return c, nil
}

// maxShown bounds the text of an input or a result a call shows.
const maxShown = 4000

func indentJSON(raw json.RawMessage, n int) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return clip(string(raw), n)
	}
	return clip(b.String(), n)
}

// The events a page lists one by one: all of them up to maxEventRows, else
// the first headEvents and the last tailEvents, the rest counted.
const (
	maxEventRows = 1500
	headEvents   = 1000
	tailEvents   = 300
)

type nameCount struct {
	Name string
	N    int
}

type eventsHead struct {
	ID, Run, Listed string
	Total           int
	Counts          []nameCount
}

type eventRow struct {
	Seq                     uint64
	At, Name, Detail, Class string
}

// writePageEvents writes a run's events as the second pass reads them, held
// to the first pass's bytes.
func writePageEvents(out io.Writer, t *template.Template, v *runView, id string) error {
	head := eventsHead{ID: id, Run: v.run, Total: v.lines, Listed: fmt.Sprintf("every event, one by one (%d)", v.lines)}
	for _, name := range slices.Sorted(maps.Keys(v.names)) {
		head.Counts = append(head.Counts, nameCount{name, v.names[name]})
	}
	long := v.lines > maxEventRows
	if long {
		head.Listed = fmt.Sprintf("the first %d and the last %d of the %d events, one by one", headEvents, tailEvents, v.lines)
	}
	if err := t.ExecuteTemplate(out, "eventsHead", head); err != nil {
		return err
	}
	var now int64
	h := newDigest()
	n, err := v.s.events(h, false, func(p *parsedLine) error {
		l := p.l
		pt := pointOf(l, p.n, &now)
		if long && p.n > headEvents && p.n <= v.lines-tailEvents {
			if p.n == headEvents+1 {
				return t.ExecuteTemplate(out, "eventSkip", fmt.Sprintf("events %d to %d are not listed one by one (%d events; the counts above hold them all)", headEvents+1, v.lines-tailEvents, v.lines-headEvents-tailEvents))
			}
			return nil
		}
		row := eventRow{Seq: l.Seq, At: v.at(v.on(pt)), Name: l.Name(), Detail: clip(detailOf(l.Event), 300)}
		switch e := l.Event.(type) {
		case *record.Warning:
			row.Class = warnKinds[warnKindOf(e.Code)].class
		case *record.ToolDecided:
			if e.Decision.Decision == record.Deny {
				row.Class = "d-denied"
			}
		}
		return t.ExecuteTemplate(out, "event", row)
	})
	if err != nil {
		return err
	}
	if n != v.lines || digestOf(h) != v.digest {
		return v.s.changed(fmt.Sprintf("%d lines, then %d", v.lines, n))
	}
	return t.ExecuteTemplate(out, "eventsTail", nil)
}

// pointOf is where line n is on the time axis, now being the last
// timestamp read before it.
func pointOf(l *record.EventLine, n int, now *int64) point {
	if ms, ok := stamp(l); ok {
		*now = ms
	}
	return point{line: int32(n), ms: *now}
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

var (
	//go:embed page/page.tmpl
	pageSource string
	//go:embed page/page.css
	pageCSS string
	//go:embed page/page.js
	pageJS string
)

// csp is the page's Content-Security-Policy: nothing is loaded from
// anywhere, and only the page's own script (by its digest) and inline
// styles run.
func csp() string {
	sum := sha256.Sum256([]byte(pageJS))
	return "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'"
}

// pageTemplate is parsed on first use: only project --html needs it.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageSource))
})
