package attest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// TestExitComputation is the table of reference notes §7 with the a18 rule:
// gap outranks unk, an auditor's 1 and 3 move the result and nothing else
// of its does, and without an audit the exit is never 1.
func TestExitComputation(t *testing.T) {
	aud := func(code int) *AuditorResult { return &AuditorResult{Exit: &code, VerdictRows: 1} }
	killed := &AuditorResult{Signal: "SIGKILL", VerdictRows: 1}
	cases := []struct {
		name     string
		control  string
		terminal string
		audited  bool
		auditor  *AuditorResult
		want     exit.Code
	}{
		{"clean", OK, TerminalOK, true, nil, exit.OK},
		{"gating gap", Gap, TerminalOK, true, nil, exit.Gap},
		{"gating unk", Unk, TerminalOK, true, nil, exit.Unknown},
		{"no terminal record", OK, TerminalNone, true, nil, exit.Unknown},
		{"a failed terminal record", OK, TerminalError, true, nil, exit.Unknown},
		{"gap outranks no terminal record", Gap, TerminalNone, true, nil, exit.Gap},
		{"gap outranks a failed terminal record", Gap, TerminalError, true, nil, exit.Gap},
		{"auditor 1", OK, TerminalOK, true, aud(1), exit.Gap},
		{"auditor 1 outranks unk", Unk, TerminalOK, true, aud(1), exit.Gap},
		{"auditor 3", OK, TerminalOK, true, aud(3), exit.Unknown},
		{"a gap outranks auditor 3", Gap, TerminalOK, true, aud(3), exit.Gap},
		{"auditor 0", OK, TerminalOK, true, aud(0), exit.OK},
		{"auditor 2 does not move it", OK, TerminalOK, true, aud(2), exit.OK},
		{"auditor 4 does not move it", Unk, TerminalOK, true, aud(4), exit.Unknown},
		{"auditor killed does not move it", OK, TerminalOK, true, killed, exit.OK},
		{"unaudited clean", OK, TerminalOK, false, nil, exit.OK},
		{"unaudited gap is never 1", Gap, TerminalOK, false, aud(1), exit.OK},
		{"unaudited no terminal record", Gap, TerminalNone, false, nil, exit.Unknown},
		{"unaudited failed terminal record", OK, TerminalError, false, nil, exit.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Evaluation{Terminal: c.terminal, Rows: []Row{{RowSpec: RowSpec{ID: H3, Severity: Gating}, Verdict: c.control},
				{RowSpec: RowSpec{ID: H2, Severity: Advisory}, Verdict: Gap}}}
			if got := e.Exit(c.audited, c.auditor); got != c.want {
				t.Errorf("exit %d, want %d", got, c.want)
			}
		})
	}
}

func TestAdvisoryRowsNeverMoveTheControlVerdict(t *testing.T) {
	s := cleanStarted()
	s.Hermetic.Imposed = s.Hermetic.Imposed[:0]
	for _, row := range []RowID{H1a, H1b, H3, H4, H5, H7, H8, H10, H11, H13} {
		s.Hermetic.Imposed = append(s.Hermetic.Imposed, record.RowHow{Row: row.String(), How: "x"})
	}
	s.Hermetic.Unavailable = []record.RowWhy{{Row: H2.String(), Why: "no knob"}, {Row: H6.String(), Why: "no knob"}}
	e := Evaluate(stream(s, ended()), cleanLaunch())
	if rowOf(t, e, H2).Verdict != Gap || rowOf(t, e, H12).Verdict != Unk {
		t.Fatal("the advisory rows should be a gap and an unk here")
	}
	if e.Control() != OK || e.Exit(true, nil) != exit.OK {
		t.Errorf("control %s exit %d: advisory rows moved the verdict", e.Control(), e.Exit(true, nil))
	}
}

func TestChildExit(t *testing.T) {
	for _, c := range []struct {
		p    *record.Process
		want string
	}{
		{nil, "none"},
		{&record.Process{Kind: "unknown"}, "none"},
		{&record.Process{Kind: "exited", Code: ip(0)}, "0"},
		{&record.Process{Kind: "exited", Code: ip(137)}, "137"},
		{&record.Process{Kind: "exited"}, "none"},
		{&record.Process{Kind: "signaled", Signal: ip(15)}, "signal SIGTERM"},
		{&record.Process{Kind: "signaled", Signal: ip(9)}, "signal SIGKILL"},
		{&record.Process{Kind: "signaled", Signal: ip(200)}, "signal 200"},
	} {
		if got := ChildExit(c.p); got != c.want {
			t.Errorf("ChildExit(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestLauncherChildExitWins: what the launcher saw outranks a stream whose
// marker carries no process.
func TestLauncherChildExitWins(t *testing.T) {
	lines := stream(cleanStarted(), ended())
	lines[len(lines)-1].Event.(*record.StreamClosed).Process = nil
	e := Evaluate(lines, cleanLaunch())
	if r := e.Report(nil, nil); !strings.Contains(r, "\nchild exit: none\n") {
		t.Errorf("no process anywhere should read none:\n%s", r)
	}
	if r := e.Report(nil, &record.Process{Kind: "signaled", Signal: ip(2)}); !strings.Contains(r, "\nchild exit: signal SIGINT\n") {
		t.Errorf("the launcher's process should be used:\n%s", r)
	}
}

func TestWithheldShapes(t *testing.T) {
	for _, c := range []struct {
		list []record.Withheld
		want string
	}{
		{nil, "withheld: not stated by the harness"},
		{[]record.Withheld{}, "withheld: none declared"},
		{[]record.Withheld{{Tool: "WebFetch", Reason: "no egress"}, {Tool: "Task", Reason: "never admitted"}}, "withheld: WebFetch (no egress); Task (never admitted)"},
	} {
		s := cleanStarted()
		s.Withheld = c.list
		r := Evaluate(stream(s, ended()), cleanLaunch()).Report(nil, nil)
		if !strings.Contains(r, "\n"+c.want+"\n") || strings.Count(r, "withheld: ") != 1 {
			t.Errorf("want exactly the line %q in:\n%s", c.want, r)
		}
	}
}

func TestAdjudicationNotes(t *testing.T) {
	for _, c := range []struct {
		census record.Census
		want   string
	}{
		{record.Census{}, "nothing was adjudicated"},
		{record.Census{Abstained: 3}, "3 call(s) were adjudicated by nobody"},
		{record.Census{Abstained: 3, Denied: 1}, ""},
	} {
		end := ended()
		end.Census = &c.census
		r := Evaluate(stream(cleanStarted(), end), cleanLaunch()).Report(nil, nil)
		has := strings.Contains(r, "adjudicated")
		if (c.want == "") == has || !strings.Contains(r, c.want) {
			t.Errorf("census %+v: want note %q in:\n%s", c.census, c.want, r)
		}
	}
}

func TestConcludePrintsNothingWithoutAnAudit(t *testing.T) {
	e := Evaluate(stream(cleanStarted(), ended()), cleanLaunch())
	var b bytes.Buffer
	code, err := e.Conclude(&b, false, nil, nil)
	if err != nil || code != exit.OK || b.Len() != 0 {
		t.Errorf("code %d err %v, printed %q; want 0 and nothing", code, err, b.String())
	}
	code, err = e.Conclude(&b, true, nil, nil)
	if err != nil || code != exit.OK || !strings.HasSuffix(b.String(), "child exit: 0\ncontrol verdict: ok\naudit verdict: ok (exit 0)\n") {
		t.Errorf("code %d err %v, printed:\n%s", code, err, b.String())
	}
}

func TestAuditOwed(t *testing.T) {
	for _, c := range []struct {
		l    Launch
		want bool
	}{
		{Launch{}, false},
		{Launch{Hermetic: ModeOn}, false},
		{Launch{Hermetic: ModeOn, Audit: true}, true},
		{Launch{Hermetic: ModeStrict}, true},
		{Launch{Audit: true}, true},
	} {
		if got := c.l.AuditOwed(); got != c.want {
			t.Errorf("%+v: AuditOwed %v, want %v", c.l, got, c.want)
		}
	}
}
