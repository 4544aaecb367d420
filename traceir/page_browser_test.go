package traceir

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/testkit/browser"
)

// The tests below open the pages in a real browser, headless Chromium
// (testkit/browser): they count with the real-client tests, and skip
// without chromium or outside the loopback-only namespace (fail under
// METAHARNESS_REQUIRE_REAL_CLIENTS=1).

// probe reads what a reviewer sees of a page from its rendered DOM.
const probe = `(() => {
  const q = (s, r) => Array.from((r || document).querySelectorAll(s));
  const shown = el => { if (!el) return false; const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none'; };
  const text = el => el ? el.innerText.trim() : '';
  return {
    banners: q('.banner').map(b => ({run: b.dataset.run, verdict: b.dataset.verdict, headline: text(b.querySelector('.headline')), shown: shown(b),
      facts: Object.fromEntries(q('dd[data-fact]', b).map(d => [d.dataset.fact, text(d)])),
      named: q('.named li', b).map(li => li.dataset.row)})),
    rows: q('table.rows tbody tr').map(tr => ({row: tr.dataset.row, changed: tr.classList.contains('changed'),
      cells: q('td[data-verdict]', tr).map(td => ({verdict: td.dataset.verdict, claim: td.dataset.claim, shown: shown(td.querySelector('.reason')) && text(td.querySelector('.reason')) !== ''}))})),
    calls: q('table.calls tbody tr.call').map(tr => ({diff: tr.dataset.diff || '', first: !!tr.querySelector('.mark'), gaps: q('td.gap', tr).length,
      cells: (tr.matches('[data-decision]') ? [tr] : q('[data-decision]', tr)).map(c => ({id: c.id, decision: c.dataset.decision, tool: text(c.querySelector('.tool')), shown: shown(c.querySelector('.tool'))}))})),
    diffs: q('.diffs li[data-changed]').map(li => text(li.querySelector('strong'))),
    warnings: q('table[id$="-warnings"] tbody tr').map(tr => text(tr.querySelector('.badge')) + ' ' + text(tr.querySelector('code'))),
    marks: q('.track a.tl').length,
    requests: q('table[id$="-requests"] tbody tr').map(tr => text(tr.querySelector('.badge'))),
  };
})()`

type seen struct {
	Banners []struct {
		Run, Verdict, Headline string
		Shown                  bool
		Facts                  map[string]string
		Named                  []string
	}
	Rows []struct {
		Row     string
		Changed bool
		Cells   []struct {
			Verdict, Claim string
			Shown          bool
		}
	}
	Calls []struct {
		Diff  string
		First bool
		Gaps  int
		Cells []struct {
			ID, Decision, Tool string
			Shown              bool
		}
	}
	Diffs    []string
	Warnings []string
	Marks    int
	Requests []string
}

// decisions are the page's calls' decisions, run by run, as "allowed" or
// "-" where a run has no counterpart.
func (s seen) decisions() [][]string {
	var out [][]string
	for _, c := range s.Calls {
		var row []string
		for _, cell := range c.Cells {
			row = append(row, cell.Decision)
		}
		for range c.Gaps {
			row = append(row, "-")
		}
		out = append(out, row)
	}
	return out
}

func (s seen) row(id string) (verdicts, claims []string, changed bool) {
	for _, r := range s.Rows {
		if r.Row == id {
			for _, c := range r.Cells {
				verdicts, claims = append(verdicts, c.Verdict), append(claims, c.Claim)
			}
			return verdicts, claims, r.Changed
		}
	}
	return nil, nil, false
}

// pageChecks is what each case's page must show.
var pageChecks = map[string]func(t *testing.T, s seen){
	"clean": func(t *testing.T, s seen) {
		b := s.Banners[0]
		if b.Verdict != "ok" || !strings.Contains(b.Headline, "audit verdict ok (exit 0)") || len(b.Named) != 0 {
			t.Errorf("banner %+v", b)
		}
		for _, r := range s.Rows {
			if r.Cells[0].Verdict != "ok" {
				t.Errorf("row %s is %s", r.Row, r.Cells[0].Verdict)
			}
		}
		if _, claims, _ := s.row("H13"); !slices.Equal(claims, []string{"imposed"}) {
			t.Errorf("H13 claimed %v", claims)
		}
		if _, claims, _ := s.row("H9"); !slices.Equal(claims, []string{"none"}) {
			t.Errorf("H9 (which no launch claims) claimed %v", claims)
		}
		wantDecisions(t, s, [][]string{{"allowed"}, {"denied"}})
	},
	"forged": func(t *testing.T, s seen) {
		b := s.Banners[0]
		if b.Verdict != "gap" || !strings.Contains(b.Headline, "audit verdict gap (exit 1)") || !slices.Equal(b.Named, []string{"H13"}) {
			t.Errorf("banner %+v", b)
		}
		if !strings.HasPrefix(b.Facts["exit code"], "1: a gap") || !strings.Contains(b.Facts["decision census"], "allowed 1 · denied 1") {
			t.Errorf("facts %v", b.Facts)
		}
		if v, c, _ := s.row("H13"); !slices.Equal(v, []string{"gap"}) || !slices.Equal(c, []string{"imposed"}) {
			t.Errorf("H13 is %v, claimed %v", v, c)
		}
		wantDecisions(t, s, [][]string{{"allowed"}, {"denied"}})
		if !slices.Equal(s.Warnings, []string{"not on the wire RECORD_NOT_ON_WIRE"}) {
			t.Errorf("warnings %q", s.Warnings)
		}
	},
	"forged-request": func(t *testing.T, s seen) {
		b := s.Banners[0]
		if b.Verdict != "gap" || !strings.Contains(b.Headline, "audit verdict gap (exit 1)") || !slices.Equal(b.Named, []string{"H13"}) {
			t.Errorf("banner %+v", b)
		}
		want := []string{"not on the wire RECORD_NOT_ON_WIRE", "forged request DECISION_NOT_ON_WIRE", "not on the wire RECORD_NOT_ON_WIRE", "throttle LOOPBACK_UPSTREAM_THROTTLED"}
		if !slices.Equal(s.Warnings, want) {
			t.Errorf("warnings %q, want %q", s.Warnings, want)
		}
		if !slices.Equal(s.Requests, []string{"? throttled", "✔ answered"}) {
			t.Errorf("the proxy's records read %q", s.Requests)
		}
		for _, row := range []string{"H4", "H6", "H12"} {
			if _, c, _ := s.row(row); !slices.Equal(c, []string{"enforced"}) {
				t.Errorf("%s claimed %v, want enforced (the run was confined)", row, c)
			}
		}
		// The forged call was never the model's: it is no call on the page.
		wantDecisions(t, s, [][]string{{"allowed"}})
	},
	"denied": func(t *testing.T, s seen) {
		b := s.Banners[0]
		if b.Verdict != "none" || !strings.Contains(b.Headline, "not verified") || !strings.HasPrefix(b.Facts["audit verdict"], "– not recorded") {
			t.Errorf("banner %+v", b)
		}
		for _, r := range s.Rows {
			if r.Cells[0].Verdict != "none" {
				t.Errorf("row %s is judged %s with no attestation document", r.Row, r.Cells[0].Verdict)
			}
		}
		wantDecisions(t, s, [][]string{{"allowed"}, {"denied"}})
	},
	"truncated": func(t *testing.T, s seen) {
		b := s.Banners[0]
		if b.Verdict != "unk" || !strings.Contains(b.Headline, "no verdict (exit 3)") || !strings.Contains(b.Facts["stream"], "truncated") {
			t.Errorf("banner %+v", b)
		}
		wantDecisions(t, s, [][]string{{"abstained"}, {"abstained"}})
	},
	"unaudited": func(t *testing.T, s seen) {
		b := s.Banners[0]
		if b.Verdict != "gap" || !strings.Contains(b.Headline, "not audited: control verdict gap, exit 0") || !slices.Contains(b.Named, "H7") {
			t.Errorf("banner %+v", b)
		}
	},
	"clean-vs-forged": func(t *testing.T, s seen) {
		if len(s.Banners) != 2 || s.Banners[0].Verdict != "ok" || s.Banners[1].Verdict != "gap" {
			t.Errorf("banners %+v", s.Banners)
		}
		for _, d := range []string{"audit verdict", "control verdict", "exit code", "attestation rows"} {
			if !slices.Contains(s.Diffs, d) {
				t.Errorf("differences %q lack %s", s.Diffs, d)
			}
		}
		if v, _, changed := s.row("H13"); !changed || !slices.Equal(v, []string{"ok", "gap"}) {
			t.Errorf("H13 is %v, changed %t", v, changed)
		}
		if _, _, changed := s.row("H4"); changed {
			t.Error("H4, the same in both, is marked changed")
		}
		wantDecisions(t, s, [][]string{{"allowed", "allowed"}, {"denied", "denied"}})
	},
	"governed-vs-truncated": func(t *testing.T, s seen) {
		wantDecisions(t, s, [][]string{{"allowed", "undecided"}, {"denied", "-"}})
		if c := s.Calls[0]; c.Diff != "decision changed" || !c.First {
			t.Errorf("the first call row is %+v, want the first divergence, its decision changed", c)
		}
		if c := s.Calls[1]; c.Diff != "only in the first run" || c.First {
			t.Errorf("the second call row is %+v", c)
		}
		if !slices.Contains(s.Diffs, "final answer") || !slices.Contains(s.Diffs, "tool calls") {
			t.Errorf("differences %q", s.Diffs)
		}
	},
}

func wantDecisions(t *testing.T, s seen, want [][]string) {
	t.Helper()
	if got := s.decisions(); !reflect.DeepEqual(got, want) {
		t.Errorf("the calls' decisions are %v, want %v", got, want)
	}
	for _, c := range s.Calls {
		for _, cell := range c.Cells {
			if !cell.Shown || cell.Tool == "" {
				t.Errorf("call %s is not shown", cell.ID)
			}
		}
	}
}

// TestPagesInTheBrowser opens each case's page in Chromium, with its
// script and without: the verdict, each row's state and each call with
// its decision are in the rendered DOM and shown either way, and the
// differences of two runs are marked. The page asks for nothing but
// itself. A screenshot of each is kept in the artefacts directory.
func TestPagesInTheBrowser(t *testing.T) {
	b := browser.Start(t)
	dir := t.TempDir()
	shots := browser.Artefacts(t, "run-page")
	for _, c := range pageCases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".html")
			if err := os.WriteFile(path, renderRuns(t, pageRuns(t, c.runs)...), 0o644); err != nil {
				t.Fatal(err)
			}
			var views []seen
			for _, noScripts := range []bool{false, true} {
				p, err := b.Open("file://"+path, browser.Options{NoScripts: noScripts})
				if err != nil {
					t.Fatal(err)
				}
				var s seen
				if err := p.Eval(probe, &s); err != nil {
					t.Fatal(err)
				}
				if len(s.Banners) != len(c.runs) || len(s.Rows) != 14 {
					t.Fatalf("scripts off %t: %d banners and %d rows", noScripts, len(s.Banners), len(s.Rows))
				}
				for _, bn := range s.Banners {
					if !bn.Shown {
						t.Errorf("scripts off %t: the verdict of %s is not shown", noScripts, bn.Run)
					}
				}
				for _, r := range s.Rows {
					for _, cell := range r.Cells {
						if !cell.Shown {
							t.Errorf("scripts off %t: row %s's reason is not shown", noScripts, r.Row)
						}
					}
				}
				if r := p.Requests(); len(r) != 1 || r[0] != "file://"+path {
					t.Errorf("the page asked for %q", r)
				}
				if con := p.Console(); len(con) > 0 {
					t.Errorf("the page's script said %q", con)
				}
				shot := filepath.Join(shots, c.name+".png")
				if noScripts {
					shot = filepath.Join(shots, c.name+"-no-scripts.png")
				}
				if err := p.Screenshot(shot); err != nil {
					t.Fatal(err)
				}
				views = append(views, s)
			}
			if !reflect.DeepEqual(views[0], views[1]) {
				t.Errorf("the page reads otherwise with scripts off:\n on: %+v\noff: %+v", views[0], views[1])
			}
			pageChecks[c.name](t, views[0])
		})
	}
}

// states reads each badge's look: its state, sign, colours and border.
const states = `(() => {
  const lum = c => { const [r, g, b] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const bg = el => { for (; el; el = el.parentElement) { const c = getComputedStyle(el).backgroundColor, m = c.match(/[\d.]+/g);
    if (m && (m.length < 4 || +m[3] > 0)) return c; } return 'rgb(255, 255, 255)'; };
  const ratio = el => { const a = lum(getComputedStyle(el).color), b = lum(bg(el)); return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); };
  const badges = Array.from(document.querySelectorAll('.badge[class*=" s-"]')).map(el => { const cs = getComputedStyle(el);
    return {state: el.className.replace(/.*\bs-/, ''), sign: el.querySelector('[aria-hidden]').textContent, background: cs.backgroundColor,
      border: cs.borderLeftStyle + ' ' + cs.borderLeftWidth + ' ' + cs.borderLeftColor, contrast: ratio(el)}; });
  const texts = Array.from(document.querySelectorAll('dt, dd, td, th, caption, p, li, a, summary, .tag, .lane-name, figcaption, h1, h2, h3'))
    .filter(el => !el.matches('.tl, .sr') && el.innerText && el.innerText.trim() && el.getClientRects().length)
    .map(el => ({what: el.tagName + '.' + el.className + ' ' + el.innerText.trim().slice(0, 40), contrast: ratio(el)}));
  return {badges, texts};
})()`

// TestPageStatesAreSeenNotOnlyRead: each state a page shows (ok, gap,
// unk, imposed, enforced, declared, unavailable, not judged; allowed,
// denied, …) differs from every other by its sign and its look, not its
// word alone, and all the page's text reads against its background at a
// contrast of at least 4.5:1 (WCAG AA).
func TestPageStatesAreSeenNotOnlyRead(t *testing.T) {
	b := browser.Start(t)
	dir := t.TempDir()
	looks := map[string]string{}
	for _, c := range pageCases {
		path := filepath.Join(dir, c.name+".html")
		if err := os.WriteFile(path, renderRuns(t, pageRuns(t, c.runs)...), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := b.Open("file://"+path, browser.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Badges []struct {
				State, Sign, Background, Border string
				Contrast                        float64
			}
			Texts []struct {
				What     string
				Contrast float64
			}
		}
		if err := p.Eval(states, &got); err != nil {
			t.Fatal(err)
		}
		for _, bd := range got.Badges {
			look := bd.Sign + " " + bd.Background + " " + bd.Border
			if prev, ok := looks[bd.State]; ok && prev != look {
				t.Errorf("%s: state %s looks two ways: %q and %q", c.name, bd.State, prev, look)
			}
			looks[bd.State] = look
			if bd.Contrast < 4.5 {
				t.Errorf("%s: a %s badge's contrast is %.2f", c.name, bd.State, bd.Contrast)
			}
		}
		for _, tx := range got.Texts {
			if tx.Contrast < 4.5 {
				t.Errorf("%s: %q has a contrast of %.2f", c.name, tx.What, tx.Contrast)
			}
		}
	}
	for _, st := range []string{"ok", "gap", "unk", "none", "imposed", "enforced", "allowed", "denied", "abstained", "undecided"} {
		if _, ok := looks[st]; !ok {
			t.Errorf("no page showed state %s", st)
		}
	}
	signs, seenLook := map[string]string{}, map[string]string{}
	for st, look := range looks {
		sign, _, _ := strings.Cut(look, " ")
		for other, l := range seenLook {
			if l == look && !sameMeaning(st, other) {
				t.Errorf("states %s and %s look alike (%q): told apart by their word alone", st, other, look)
			}
		}
		seenLook[st], signs[st] = look, sign
	}
}

// sameMeaning: the states a page draws alike on purpose, a verdict and a
// decision that say the same thing.
func sameMeaning(a, b string) bool {
	for _, pair := range [][2]string{{"ok", "allowed"}, {"gap", "denied"}, {"unk", "undecided"}, {"none", "abstained"}} {
		if a == pair[0] && b == pair[1] || a == pair[1] && b == pair[0] {
			return true
		}
	}
	return false
}

// TestPageByPointerKeyboardAndPrinter: a click on a call's mark on the
// timeline leads to that call and opens its input, decision and result; a
// keyboard reaches the skip link first and the timeline's marks by Tab,
// and Enter on one does the same; printed, the page drops its navigation
// and makes a PDF.
func TestPageByPointerKeyboardAndPrinter(t *testing.T) {
	b := browser.Start(t)
	path := filepath.Join(t.TempDir(), "forged.html")
	if err := os.WriteFile(path, renderRuns(t, pageRuns(t, pageCase(t, "forged"))...), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := b.Open("file://"+path, browser.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opened := func() (hash string, open bool) {
		var r struct {
			Hash string
			Open bool
		}
		// The hash changes, and the script opens the details, a task later.
		if err := p.Eval(`(async () => { for (let i = 0; i < 50; i++) { const el = document.getElementById(location.hash.slice(1)), d = el && el.querySelector('details');
			if (d && d.open) return {hash: location.hash, open: true}; await new Promise(r => setTimeout(r, 20)); }
			return {hash: location.hash, open: false}; })()`, &r); err != nil {
			t.Fatal(err)
		}
		return r.Hash, r.Open
	}
	// The pointer: the denied call's mark, scrolled into view.
	var box struct{ X, Y float64 }
	if err := p.Eval(`(() => { const a = document.querySelector('.track a.tl.c-denied'); a.scrollIntoView({block: 'center'});
		const r = a.getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()`, &box); err != nil {
		t.Fatal(err)
	}
	if err := p.Click(box.X, box.Y); err != nil {
		t.Fatal(err)
	}
	if hash, open := opened(); hash != "#r0-call-2" || !open {
		t.Errorf("a click on the denied call's mark led to %q (details open: %t), want #r0-call-2 open", hash, open)
	}
	// The keyboard, from the top of the page opened again.
	if p, err = b.Open("file://"+path, browser.Options{}); err != nil {
		t.Fatal(err)
	}
	focused := func() string {
		var s string
		if err := p.Eval(`(() => { const a = document.activeElement; return a ? a.tagName + '.' + a.className + ' ' + (a.getAttribute('href') || '') : ''; })()`, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := p.Key("Tab", false); err != nil {
		t.Fatal(err)
	}
	if f := focused(); f != "A.skip #calls" {
		t.Errorf("the first Tab stop is %q, want the skip link", f)
	}
	var reached string
	for range 200 {
		if err := p.Key("Tab", false); err != nil {
			t.Fatal(err)
		}
		if f := focused(); strings.HasPrefix(f, "A.tl c-") {
			reached = f
			break
		}
	}
	if reached == "" {
		t.Fatal("no call on the timeline was reached by Tab")
	}
	if err := p.Key("Enter", false); err != nil {
		t.Fatal(err)
	}
	href := reached[strings.LastIndex(reached, " ")+1:]
	if hash, open := opened(); hash != href || !open {
		t.Errorf("Enter on %s led to %q (details open: %t)", reached, hash, open)
	}
	// The printer.
	if err := p.Media("print"); err != nil {
		t.Fatal(err)
	}
	var nav string
	if err := p.Eval(`getComputedStyle(document.querySelector('nav.toc')).display`, &nav); err != nil {
		t.Fatal(err)
	}
	if nav != "none" {
		t.Errorf("printed, the navigation shows (display %s)", nav)
	}
	pdf, err := p.PDF()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF")) || len(pdf) < 10000 {
		t.Errorf("printing made %d bytes, not a PDF", len(pdf))
	}
	_ = os.WriteFile(filepath.Join(browser.Artefacts(t, "run-page"), "forged.pdf"), pdf, 0o644)
}

// TestLongRunPageInTheBrowser: the page of a 100,000-event run loads and
// renders in Chromium, its verdict, timeline and calls shown.
func TestLongRunPageInTheBrowser(t *testing.T) {
	b := browser.Start(t)
	data, _ := benchStream(t, 100_000, 997)
	path := filepath.Join(t.TempDir(), "long.html")
	page := renderRuns(t, Run{Stream: StreamOf("long.jsonl", data)})
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := b.Open("file://"+path, browser.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	if err := p.Eval(probe, &s); err != nil {
		t.Fatal(err)
	}
	denied := 0
	for _, row := range s.decisions() {
		if row[0] == "denied" {
			denied++
		}
	}
	if len(s.Banners) != 1 || !s.Banners[0].Shown || len(s.Calls) < headCalls || denied != 20 || s.Marks < 20 {
		t.Errorf("%d banners, %d calls listed (%d denied), %d marks", len(s.Banners), len(s.Calls), denied, s.Marks)
	}
	if err := p.Screenshot(filepath.Join(browser.Artefacts(t, "run-page"), "long.png")); err != nil {
		t.Fatal(err)
	}
	t.Logf("a page of %d bytes for %d events", len(page), bytes.Count(data, []byte("\n")))
}
