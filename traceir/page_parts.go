package traceir

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// stateNone is the state of what is not judged, not claimed or not
// recorded.
const stateNone = "none"

// signs go before each state's word: the verdicts, the claim's states,
// a decision's and stateNone. With its colour and its border (page.css)
// a state is never told by its word alone.
var signs = map[string]string{
	attest.OK: "✔", attest.Gap: "✖", attest.Unk: "?", stateNone: "–",
	attest.ClaimImposed: "■", attest.ClaimEnforced: "◆", attest.ClaimDeclared: "✎", attest.ClaimUnavailable: "○",
	allowed.String(): "✔", denied.String(): "✖", replaced.String(): "⇄", abstained.String(): "…", undecided.String(): "?",
}

// badge is a state as the page shows it: its sign and its word.
type badge struct{ State, Word string }

func (b badge) Sign() string { return signs[b.State] }

// fact is one line of a run's banner: what it states, its value, and the
// long form one click away when there is one.
type fact struct {
	Key, Value, More string
	Badge            *badge
}

// text is what the fact says, its badge's word first.
func (f fact) text() string {
	if f.Badge == nil {
		return f.Value
	}
	return strings.TrimSpace(f.Badge.Word + " " + f.Value)
}

// banner is the top of a run: the headline verdict, the facts a reviewer
// looks for first, and every row that is not ok, named.
type banner struct {
	ID, Name, Run string
	Headline      badge
	Line          string // what the headline says
	Facts         []fact
	Named         []namedRow
	Problems      []string
}

type namedRow struct {
	ID, Label, Severity string
	Badge               badge
}

// bannerOf is the banner of v.
func bannerOf(v *runView, id string) banner {
	b := banner{ID: id, Name: v.s.Name, Run: v.run}
	d := v.doc
	switch {
	case d == nil:
		b.Headline = badge{stateNone, "not verified"}
		b.Line = "No attestation document was given, so this page shows no verdict and no exit code: give the run's own (project --attestation FILE, or keep metaharness-attestation.json beside metaharness-events.jsonl as --records-dir does)."
	case d.Audited:
		b.Headline = badge{verdictState(exit.Code(d.ExitCode)), "audit verdict " + attest.AuditVerdict(exit.Code(d.ExitCode))}
		b.Line = "The run was audited: its gating rows set its exit code."
	default:
		st := d.ControlVerdict
		if st == attest.OK && d.ExitCode != 0 {
			st = attest.Unk
		}
		b.Headline = badge{st, fmt.Sprintf("not audited: control verdict %s, exit %d", d.ControlVerdict, d.ExitCode)}
		b.Line = "The run owed no audit (no --audit, no --hermetic strict): its rows were judged, and never moved its exit code."
	}
	add := func(key, value, more string, bd *badge) {
		b.Facts = append(b.Facts, fact{Key: key, Value: value, More: more, Badge: bd})
	}
	if d != nil {
		if d.Audited {
			add("audit verdict", "", "", &badge{verdictState(exit.Code(d.ExitCode)), attest.AuditVerdict(exit.Code(d.ExitCode))})
		} else {
			add("audit verdict", "no --audit, no --hermetic strict", "", &badge{stateNone, "not audited"})
		}
		add("control verdict", "over the gating rows", "", &badge{d.ControlVerdict, d.ControlVerdict})
		meaning := strings.ReplaceAll(exit.Meanings[exit.Code(d.ExitCode)], "`", "")
		one, more := oneLine(meaning)
		add("exit code", fmt.Sprintf("%d: %s", d.ExitCode, one), more, nil)
	} else {
		add("audit verdict", "no attestation document", "", &badge{stateNone, "not recorded"})
		add("control verdict", "no attestation document", "", &badge{stateNone, "not recorded"})
		add("exit code", "not recorded: no attestation document", "", nil)
	}
	add("kind", v.kind, "", nil)
	add("vendor version", v.version, "", nil)
	model := v.model
	if len(v.observed) > 0 {
		model += " (the vendor also recorded " + strings.Join(v.observed, ", ") + ")"
	}
	add("model", model, "", nil)
	add("duration", v.duration(), "", nil)
	c, source := v.census()
	census := fmt.Sprintf("allowed %d · denied %d · replaced %d · abstained %d", c.Allowed, c.Denied, c.Replaced, c.Abstained)
	if c.NotOnWire > 0 {
		census += fmt.Sprintf(" · %d request(s) for a call not on the wire, denied before any decision", c.NotOnWire)
	}
	if c.NotOnRecord > 0 {
		census += fmt.Sprintf(" · %d request(s) for a call not on the vendor's record, denied before any decision", c.NotOnRecord)
	}
	add("decision census", census, "counted from the "+source+"; by seam: "+counts(c.BySeam)+"; by decider: "+counts(c.ByDecider), nil)
	add("withheld tools", v.withheldLine(), "", nil)
	_, stream, _ := strings.Cut(v.complete.Line(), " — ")
	add("stream", stream, "", &badge{streamState(v.complete.State), v.complete.State})
	add("terminal record", terminalLine(v.ended), "", nil)
	if d != nil {
		add("child exit", d.ChildExit, "", nil)
	} else {
		add("child exit", attest.ChildExit(v.process()), "", nil)
	}
	if v.ended != nil && v.ended.FinalAnswer != nil {
		one, more := oneLine(clip(v.ended.FinalAnswer.Text, maxAnswer))
		add("final answer", one, more, nil)
	}
	if d != nil {
		add("attestation", v.docName, "", nil)
	}
	for _, r := range rowsOf(v) {
		if r.Verdict.State == attest.Gap || r.Verdict.State == attest.Unk {
			b.Named = append(b.Named, namedRow{r.ID, r.Label, r.Severity, r.Verdict})
		} else if d == nil && r.Claim.State == attest.ClaimUnavailable {
			b.Named = append(b.Named, namedRow{r.ID, r.Label, r.Severity, r.Claim})
		}
	}
	if v.complete.State != record.Complete {
		b.Problems = append(b.Problems, "The stream is "+v.complete.State+": "+v.complete.Detail+". What it does not hold did not reach this page.")
	}
	return b
}

// withheldLine is what the run said of the tools the machine would not
// admit: the attestation's list, else the opening record's.
func (v *runView) withheldLine() string {
	list, stated := v.withheld, v.withheldStated
	if v.doc != nil {
		list, stated = v.doc.Withheld, v.doc.Withheld != nil
	}
	switch {
	case !stated:
		return "not stated by the harness"
	case len(list) == 0:
		return "none"
	}
	var items []string
	for _, w := range list {
		items = append(items, w.Tool+" ("+w.Reason+")")
	}
	return strings.Join(items, "; ")
}

// maxAnswer bounds the final answer a banner carries.
const maxAnswer = 4000

func verdictState(code exit.Code) string {
	switch code {
	case exit.OK:
		return attest.OK
	case exit.Gap:
		return attest.Gap
	}
	return attest.Unk
}

func streamState(s string) string {
	if s == record.Complete {
		return attest.OK
	}
	return attest.Unk
}

func (v *runView) process() *record.Process {
	if v.closed == nil {
		return nil
	}
	return v.closed.Process
}

func terminalLine(e *record.SessionEnded) string {
	switch {
	case e == nil:
		return "none: the stream holds no session.ended"
	case e.IsError != nil && *e.IsError:
		words := []string{}
		for _, p := range []*string{e.Subtype, e.TerminalReason, e.StopReason} {
			if p != nil && *p != "" {
				words = append(words, *p)
			}
		}
		return "session.ended says the run failed (" + strings.Join(words, ", ") + ")"
	}
	return "session.ended: the run finished"
}

func counts(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// oneLine is the first clause of s, short enough to read at a glance, and
// the whole of s when that is more ("" when the line says it all).
func oneLine(s string) (line, more string) {
	const most = 140
	cut := len(s)
	for _, sep := range []string{"; ", ". ", "\n"} {
		if i := strings.Index(s, sep); i >= 20 && i < cut {
			cut = i
		}
	}
	line = strings.TrimSuffix(s[:cut], ".")
	if utf8.RuneCountInString(line) > most {
		line = clip(line, most)
	}
	if line == strings.TrimSuffix(s, ".") {
		return line, ""
	}
	if !strings.HasSuffix(line, "…") {
		line += " …"
	}
	return line, s
}

// rowCell is one run's state of one attestation row.
type rowCell struct {
	Verdict, Claim badge
	Reason, More   string
}

// pageRow is one attestation row across the page's runs.
type pageRow struct {
	ID, Label, Severity, Assertion string
	Cells                          []rowCell
	Changed                        bool
}

// runRow is one row of rowsOf, for one run.
type runRow struct {
	ID, Label, Severity, Assertion string
	rowCell
}

// rowsOf is every row of the floor for v, in the report's order: the
// verdict and its detail from the attestation document, the claim from
// the attestation the opening record carries (or the document's).
func rowsOf(v *runView) []runRow {
	att := v.hermetic
	judged := map[string]attest.Row{}
	if v.doc != nil {
		if v.doc.Attestation != nil {
			att = v.doc.Attestation
		}
		for _, r := range v.doc.Rows {
			judged[r.ID.String()] = r
		}
	}
	out := make([]runRow, 0, len(attest.Rows))
	for _, spec := range attest.Rows {
		r := runRow{ID: spec.ID.Display(), Label: spec.Label, Severity: spec.Severity, Assertion: spec.Assertion}
		state, words := attest.Claimed(att, spec.ID)
		r.Claim = badge{state, state}
		if state == "" {
			r.Claim = badge{stateNone, "not claimed"}
		}
		var full []string
		if j, ok := judged[spec.ID.String()]; ok {
			r.Verdict = badge{j.Verdict, j.Verdict}
			r.Reason = j.Detail
			full = append(full, j.Detail)
		} else {
			r.Verdict = badge{stateNone, "not judged"}
			r.Reason = words
			if words == "" {
				r.Reason = "the opening record claims nothing of this row"
			}
		}
		if words != "" && words != r.Reason {
			full = append(full, "The claim ("+state+"): "+words)
		}
		one, more := oneLine(r.Reason)
		r.Reason = one
		if len(full) > 1 {
			more = strings.Join(full, "\n\n")
		}
		r.More = more
		out = append(out, r)
	}
	return out
}

// rowTables are the attestation's rows across the page's runs, the gating
// ones apart from the advisory ones.
func rowTables(views []*runView) (gating, advisory []pageRow) {
	per := make([][]runRow, len(views))
	for i, v := range views {
		per[i] = rowsOf(v)
	}
	for k, spec := range attest.Rows {
		r := pageRow{ID: per[0][k].ID, Label: spec.Label, Severity: spec.Severity, Assertion: spec.Assertion}
		for i := range views {
			r.Cells = append(r.Cells, per[i][k].rowCell)
		}
		if len(r.Cells) == 2 {
			a, b := r.Cells[0], r.Cells[1]
			r.Changed = a.Verdict != b.Verdict || a.Claim != b.Claim
		}
		if spec.Severity == attest.Gating {
			gating = append(gating, r)
		} else {
			advisory = append(advisory, r)
		}
	}
	return gating, advisory
}

// requestRow is one of the loopback proxy's records of a model request.
type requestRow struct {
	ID, Seq, Start, What, Status, Took, Notes string
	Bar                                       string // the bar's width, CSS
	Badge                                     badge
	Slowest                                   bool
}

// maxRequestRows bounds the proxy's records a page lists (a run keeps its
// latest 4096).
const maxRequestRows = 500

// requestRows are the proxy's records as the page lists them, and how many
// it leaves out.
func requestRows(v *runView, id string) (rows []requestRow, left int) {
	recs := v.proxyRecords()
	var longest int64
	slowest := -1
	for i, r := range recs {
		if ms := r.Duration.Milliseconds(); ms > longest {
			longest, slowest = ms, i
		}
	}
	for i, r := range recs {
		if i == maxRequestRows {
			return rows, len(recs) - i
		}
		row := requestRow{ID: fmt.Sprintf("%s-req-%d", id, r.Seq), Seq: fmt.Sprint(r.Seq), What: r.Method + " " + r.Path,
			Took: fmtMS(r.Duration.Milliseconds()), Slowest: i == slowest && len(recs) > 1}
		if origin := v.from; v.byTime {
			row.Start = "+" + fmtMS(r.Start.UnixMilli()-origin)
		} else {
			row.Start = "+" + fmtMS(r.Start.Sub(recs[0].Start).Milliseconds()) + " after the first"
		}
		row.Status = fmt.Sprintf("%d", r.Status)
		if r.UpstreamStatus != 0 && r.UpstreamStatus != r.Status {
			row.Status += fmt.Sprintf(" (upstream %d)", r.UpstreamStatus)
		}
		row.Badge = badge{attest.OK, "answered"}
		var notes []string
		switch {
		case r.Refused != "":
			row.Badge = badge{attest.Gap, "refused"}
			notes = append(notes, "refused: "+r.Refused)
		case r.Quota != nil:
			row.Badge = badge{attest.Gap, "quota"}
			notes = append(notes, "the upstream refused the account (quota)")
		case r.Error != "" || r.Status >= 400:
			row.Badge = badge{attest.Unk, "failed"}
		case len(r.Throttled) > 0:
			row.Badge = badge{attest.Unk, "throttled"}
		}
		for _, th := range r.Throttled {
			notes = append(notes, fmt.Sprintf("throttled %d, waited %s", th.Status, fmtMS(th.Waited.Milliseconds())))
		}
		if r.Error != "" {
			notes = append(notes, r.Error)
		}
		row.Notes = strings.Join(notes, "; ")
		if longest > 0 {
			row.Bar = fmt.Sprintf("width:%.1f%%", 100*float64(r.Duration.Milliseconds())/float64(longest))
		}
		rows = append(rows, row)
	}
	return rows, 0
}
