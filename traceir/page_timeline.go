package traceir

import (
	"fmt"
	"html/template"

	"github.com/metaharness/metaharness/record"
)

// A lane draws each of its items while it has at most maxMarks; past that
// it draws counts over nBins slices of the axis, and the items a reviewer
// looks for (a refused call, a forged request) over them, at most
// maxMarks of those.
const (
	maxMarks = 600
	nBins    = 200
)

// timeline is one run on one axis: its lanes, and ticks to read it by.
type timeline struct {
	ID, Caption string
	Ticks       []tick
	Lanes       []lane
}

type tick struct {
	Style template.CSS
	Label string
}

type lane struct {
	Name  string
	Note  string // how the lane is drawn, when it summarises
	Marks []tlMark
	Bins  []tlBin
	Empty string // what the lane would hold, when it holds nothing
}

// tlMark is one item: a link to its row when it has one.
type tlMark struct {
	Style        template.CSS
	Class, Href  string
	Label, Title string
}

type tlBin struct {
	Style template.CSS
	Level int
	Label string
}

// scale maps a run's axis to the page's width: offsets from the run's
// start over span, so that two runs timed in milliseconds share one.
type scale struct{ span int64 }

func (v *runView) left(x int64, s scale) float64 {
	return 100 * float64(x-v.from) / float64(max(s.span, 1))
}

func (v *runView) place(from, to int64, s scale) template.CSS {
	l := min(max(v.left(from, s), 0), 100)
	w := max(v.left(to, s)-v.left(from, s), 0)
	w = min(w, 100-l)
	return template.CSS(fmt.Sprintf("left:%.3f%%;width:%.3f%%", l, w))
}

// at is where p is, as the page names it: "+1.2 s" or "event 40".
func (v *runView) at(x int64) string {
	if v.byTime {
		return "+" + fmtMS(x-v.from)
	}
	return fmt.Sprintf("event %d", x)
}

// timelineOf lays out v's timeline on s.
func (v *runView) timelineOf(id string, s scale) (timeline, error) {
	t := timeline{ID: id + "-timeline"}
	if v.byTime {
		t.Caption = fmt.Sprintf("%s: %s from its first timestamp to its last, on a time axis.", v.run, fmtMS(v.to-v.from))
	} else {
		t.Caption = fmt.Sprintf("%s: %d events in their order (the stream carries no timestamps that differ, so the axis is the events' order, not time).", v.run, v.lines)
	}
	for i := 0; i <= 4; i++ {
		x := v.from + s.span*int64(i)/4
		t.Ticks = append(t.Ticks, tick{template.CSS(fmt.Sprintf("left:%d%%", 25*i)), v.at(x)})
	}
	req, err := v.requestLane(id, s)
	if err != nil {
		return t, err
	}
	calls, err := v.callLane(id, s)
	if err != nil {
		return t, err
	}
	warns, err := v.warningLane(id, s)
	if err != nil {
		return t, err
	}
	t.Lanes = []lane{req, v.turnLane(s), calls, warns}
	return t, nil
}

// item is what a lane is drawn from: an item's extent on the axis and
// whether it is one a summarised lane still draws.
type item struct {
	from, to int64
	notable  bool
}

// binned is a lane's counts over nBins slices of the axis, each slice's
// label saying what it holds.
func (v *runView) binned(items []item, s scale, what string) []tlBin {
	var n, notable [nBins]int
	for _, it := range items {
		b := min(max(int(v.left(it.from, s)/100*nBins), 0), nBins-1)
		n[b]++
		if it.notable {
			notable[b]++
		}
	}
	most := 0
	for _, c := range n {
		most = max(most, c)
	}
	var out []tlBin
	for b, c := range n {
		if c == 0 {
			continue
		}
		label := fmt.Sprintf("%d %s", c, what)
		if notable[b] > 0 {
			label += fmt.Sprintf(", %d of them refused or failed", notable[b])
		}
		out = append(out, tlBin{Style: template.CSS(fmt.Sprintf("left:%.3f%%;width:%.3f%%", 100*float64(b)/nBins, 100.0/nBins)),
			Level: 1 + 4*c/max(most, 1), Label: label})
	}
	return out
}

// summarise decides which of n items a lane draws one by one: all of them
// while there are at most maxMarks, else only the notable ones, at most
// maxMarks of those; the lane then also carries bins.
func summarise(n int, notable func(i int) bool) (draw func(i int) bool, summarised bool) {
	if n <= maxMarks {
		return func(int) bool { return true }, false
	}
	drawn := 0
	return func(i int) bool {
		if drawn < maxMarks && notable(i) {
			drawn++
			return true
		}
		return false
	}, true
}

func (v *runView) callLane(id string, s scale) (lane, error) {
	l := lane{Name: "tool calls", Empty: "no tool call was requested"}
	notable := func(i int) bool { c := v.calls[i]; return c.dec != allowed || c.failed }
	draw, summarised := summarise(len(v.calls), notable)
	slowest := v.slowestCall()
	var items []item
	for i, c := range v.calls {
		from, to := v.on(c.from), v.on(c.to)
		items = append(items, item{from, to, notable(i)})
		if !draw(i) {
			continue
		}
		req, err := eventAt[*record.ToolRequested](v.s, c.requested, "tool.requested")
		if err != nil {
			return l, err
		}
		class := "c-" + c.dec.String()
		if c.failed {
			class += " c-failed"
		}
		label := fmt.Sprintf("call %d: %s, %s", i+1, req.Name, c.dec)
		if v.byTime && to > from {
			label += ", " + fmtMS(to-from)
		}
		if i == slowest {
			class += " slowest"
			label += " (the slowest call)"
		}
		l.Marks = append(l.Marks, tlMark{Style: v.place(from, to, s), Class: class, Href: "#" + callID(id, i), Label: label, Title: label + " at " + v.at(from)})
	}
	if summarised {
		l.Bins = v.binned(items, s, "calls")
		l.Note = fmt.Sprintf("%d calls, drawn as counts per slice of the axis (darker: more); each refused or failed one is drawn over them (at most %d).", len(v.calls), maxMarks)
	}
	return l, nil
}

// slowestCall is the index of the call that took longest on a time axis,
// -1 when none took any time.
func (v *runView) slowestCall() int {
	best, at := int64(0), -1
	if !v.byTime {
		return -1
	}
	for i, c := range v.calls {
		if d := v.on(c.to) - v.on(c.from); d > best {
			best, at = d, i
		}
	}
	return at
}

func (v *runView) turnLane(s scale) lane {
	l := lane{Name: "turns", Empty: "the stream records no turn"}
	var items []item
	for _, t := range v.turns {
		to := v.on(t.to)
		if t.open {
			to = v.to
		}
		items = append(items, item{from: v.on(t.from), to: to})
	}
	draw, summarised := summarise(len(items), func(int) bool { return false })
	for i, t := range v.turns {
		if !draw(i) {
			continue
		}
		it := items[i]
		label := fmt.Sprintf("turn %d", t.turn)
		if t.open {
			label += " (never ended)"
		} else if v.byTime {
			label += ", " + fmtMS(it.to-it.from)
		}
		l.Marks = append(l.Marks, tlMark{Style: v.place(it.from, it.to, s), Class: "turn", Label: label, Title: label + " from " + v.at(it.from)})
	}
	if summarised {
		l.Bins = v.binned(items, s, "turns")
		l.Note = fmt.Sprintf("%d turns, drawn as counts per slice of the axis.", len(items))
	}
	return l
}

// requestLane is the model requests: the loopback proxy's records when the
// attestation holds them and the axis is time (each from its start for as
// long as it took), else each request the stream records, where it does
// (the proxy's line of it, else the vendor's usage event).
func (v *runView) requestLane(id string, s scale) (lane, error) {
	l := lane{Name: "model requests", Empty: "no model request is recorded (the proxy's records are in the attestation document, and the stream has no usage event)"}
	if recs := v.proxyRecords(); v.byTime && len(recs) > 0 {
		var items []item
		for _, r := range recs {
			items = append(items, item{r.Start.UnixMilli(), r.Start.Add(r.Duration).UnixMilli(), r.Refused != "" || r.Quota != nil || r.Error != "" || len(r.Throttled) > 0})
		}
		draw, summarised := summarise(len(items), func(i int) bool { return items[i].notable })
		for i, r := range recs {
			if !draw(i) || i >= maxRequestRows {
				continue
			}
			label := fmt.Sprintf("request %d: %s %s answered %d in %s", r.Seq, r.Method, r.Path, r.Status, fmtMS(r.Duration.Milliseconds()))
			class := "q-ok"
			if n := len(r.Throttled); n > 0 {
				label += fmt.Sprintf(" after %d throttle(s)", n)
				class = "q-throttled"
			}
			if r.Refused != "" || r.Quota != nil || r.Error != "" || r.Status >= 400 {
				class = "q-failed"
			}
			l.Marks = append(l.Marks, tlMark{Style: v.place(items[i].from, items[i].to, s), Class: class, Href: fmt.Sprintf("#%s-req-%d", id, r.Seq), Label: label, Title: label + " at " + v.at(items[i].from)})
		}
		if summarised {
			l.Bins = v.binned(items, s, "requests")
			l.Note = fmt.Sprintf("%d requests, drawn as counts per slice of the axis.", len(items))
		}
		return l, nil
	}
	// The proxy's own lines where the run had one, else the vendor's
	// accounting: each request once.
	marks := v.relayed
	if len(marks) == 0 {
		marks = v.usage
	}
	return v.markLane(l, marks, s, "", func(i int, m mark) (string, string, error) {
		l, err := v.s.lineAt(m.ref.n, m.ref.off, m.ref.size)
		if err != nil {
			return "", "", err
		}
		switch e := l.Event.(type) {
		case *record.UsageEvent:
			return fmt.Sprintf("request %s (usage: %s)", deref(e.RequestID), deref(e.Model)), "", nil
		case *record.Warning:
			return clip(e.Message, 200), "", nil
		}
		return l.Name(), "", nil
	})
}

func (v *runView) warningLane(id string, s scale) (lane, error) {
	l := lane{Name: "warnings", Empty: "no warning"}
	return v.markLane(l, v.warnings, s, "; the forged requests, the lines not on the wire, the throttles and the refused egress are drawn over them", func(i int, m mark) (string, string, error) {
		w, err := eventAt[*record.Warning](v.s, m.ref, "warning")
		if err != nil {
			return "", "", err
		}
		return warnKinds[m.kind].label + ": " + w.Code + ": " + clip(w.Message, 200), "#" + warnID(id, i), nil
	})
}

// markLane draws marks, each labelled (and linked) by what describe reads
// of it; notes says which a summarised lane still draws.
func (v *runView) markLane(l lane, marks []mark, s scale, notes string, describe func(i int, m mark) (label, href string, err error)) (lane, error) {
	notable := func(i int) bool { k := marks[i].kind; return k != warnOther && k != warnRequest }
	draw, summarised := summarise(len(marks), notable)
	var items []item
	for i, m := range marks {
		x := v.on(m.at)
		items = append(items, item{x, x, notable(i)})
		if !draw(i) {
			continue
		}
		label, href, err := describe(i, m)
		if err != nil {
			return l, err
		}
		l.Marks = append(l.Marks, tlMark{Style: v.place(x, x, s), Class: "point " + warnKinds[m.kind].class, Href: href, Label: label, Title: label + " at " + v.at(x)})
	}
	if summarised {
		l.Bins = v.binned(items, s, l.Name)
		l.Note = fmt.Sprintf("%d %s, drawn as counts per slice of the axis%s.", len(marks), l.Name, notes)
	}
	return l, nil
}

func callID(run string, i int) string { return fmt.Sprintf("%s-call-%d", run, i+1) }
func warnID(run string, i int) string { return fmt.Sprintf("%s-warn-%d", run, i+1) }
