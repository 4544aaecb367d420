package attest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

func sp(s string) *string { return &s }
func ip(i int) *int       { return &i }

// stream numbers events as the Writer would and closes them with a
// stream.closed marker that counts them.
func stream(evs ...record.Event) []*record.EventLine {
	var out []*record.EventLine
	for i, ev := range evs {
		out = append(out, &record.EventLine{Seq: uint64(i + 1), Run: "r1", Event: ev})
	}
	closed := &record.StreamClosed{Events: uint64(len(evs)), Reason: record.ReasonCompleted, RunID: "r1",
		Process: &record.Process{Kind: "exited", Code: ip(0)}}
	return append(out, &record.EventLine{Seq: uint64(len(evs) + 1), Run: "r1", Event: closed})
}

// cleanStarted is a claude opening record on which every row is ok against
// cleanLaunch.
func cleanStarted() *record.SessionStarted {
	att := &record.Attestation{Mode: ModeStrict, Decisions: "frame"}
	for _, row := range []RowID{H1a, H1b, H2, H3, H4, H5, H6, H7, H8, H10, H11, H12, H13} {
		att.Imposed = append(att.Imposed, record.RowHow{Row: row.String(), How: "mechanism of " + row.String()})
	}
	return &record.SessionStarted{
		Adapter: "claude", AdapterClass: "harness", HarnessVersion: sp("2.1.328"),
		CredentialSource: sp("none"), OutputStyle: sp("default"), Cwd: sp("/scratch/w"),
		Withheld: []record.Withheld{}, Plugins: []record.Plugin{},
		MCPServers: []record.MCPServer{{Name: "metaharness", Status: sp("connected")}},
		Hermetic:   att,
	}
}

func cleanLaunch() Launch {
	return Launch{Kind: "claude", Class: "harness", Hermetic: ModeStrict, Credentials: "operator-login",
		PlannedCwd: "/scratch/w", PlannedMCPServers: []string{"metaharness"}, Pins: []string{"2.1.328"}}
}

func ended() *record.SessionEnded {
	f := false
	return &record.SessionEnded{IsError: &f, Census: &record.Census{Allowed: 1, BySeam: map[string]uint64{"hook": 1}, ByDecider: map[string]uint64{"frame": 1}}}
}

func rowOf(t *testing.T, e *Evaluation, id RowID) Row {
	t.Helper()
	for _, r := range e.Rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %s", id)
	return Row{}
}

func TestCleanRunIsOKOnEveryRow(t *testing.T) {
	e := Evaluate(stream(cleanStarted(), ended()), cleanLaunch())
	if len(e.Rows) != len(Rows) || len(Rows) != 14 {
		t.Fatalf("%d rows, want 14", len(e.Rows))
	}
	for i, r := range e.Rows {
		if r.ID != Rows[i].ID {
			t.Errorf("row %d is %s, want %s (report order)", i, r.ID, Rows[i].ID)
		}
		if r.Verdict != OK {
			t.Errorf("%s: %s — %s", r.ID, r.Verdict, r.Detail)
		}
	}
	if e.Control() != OK || e.Exit(true, nil) != 0 {
		t.Errorf("control %s, exit %d; want ok, 0", e.Control(), e.Exit(true, nil))
	}
}

// TestRowRules holds each row to its rule: one change from the clean run,
// the verdict it must give, and words its detail must carry.
func TestRowRules(t *testing.T) {
	cases := []struct {
		name    string
		row     RowID
		started func(*record.SessionStarted)
		launch  func(*Launch)
		verdict string
		detail  string
	}{
		{"H1a plugins null is unk", H1a, func(s *record.SessionStarted) { s.Plugins = nil }, nil, Unk, "does not say which plugins"},
		{"H1a direct provider, none declared, null is ok", H1a, func(s *record.SessionStarted) { s.Plugins = nil }, func(l *Launch) { l.Class = "direct_provider" }, OK, "direct provider"},
		{"H1a class read from the record when the launch leaves it out", H1a, func(s *record.SessionStarted) { s.Plugins = nil; s.AdapterClass = "direct_provider" }, func(l *Launch) { l.Class = "" }, OK, "direct provider"},
		{"H1a direct provider with a declared plugin, null is unk", H1a, func(s *record.SessionStarted) { s.Plugins = nil }, func(l *Launch) { l.Class = "direct_provider"; l.Plugins = []string{"p"} }, Unk, ""},
		{"H1a the declared set, in another order", H1a, func(s *record.SessionStarted) { s.Plugins = []record.Plugin{{Name: "b"}, {Name: "a"}} }, func(l *Launch) { l.Plugins = []string{"a", "b"} }, OK, "a, b"},
		{"H1a an undeclared plugin is a gap", H1a, func(s *record.SessionStarted) { s.Plugins = []record.Plugin{{Name: "a"}, {Name: "x"}} }, func(l *Launch) { l.Plugins = []string{"a"} }, Gap, "undeclared: x"},
		{"H1a a declared plugin not loaded is a gap", H1a, nil, func(l *Launch) { l.Plugins = []string{"a"} }, Gap, "not loaded: a"},
		{"H1a plugins built into the vendor binary are not counted", H1a, func(s *record.SessionStarted) {
			s.Plugins = []record.Plugin{{Name: "cc-plugin-privacy", Source: sp("cc-plugin-privacy@builtin")}, {Name: "a"}}
		}, func(l *Launch) { l.Plugins = []string{"a"} }, OK, "not counted: cc-plugin-privacy"},
		{"H1a a builtin-looking name from elsewhere still counts", H1a, func(s *record.SessionStarted) {
			s.Plugins = []record.Plugin{{Name: "x", Source: sp("/home/op/plugins/x")}}
		}, nil, Gap, "undeclared: x"},
		{"H1a a plugin loaded twice is a gap", H1a, func(s *record.SessionStarted) { s.Plugins = []record.Plugin{{Name: "a"}, {Name: "a"}} }, func(l *Launch) { l.Plugins = []string{"a"} }, Gap, "undeclared: a"},
		{"H1b null is unk", H1b, func(s *record.SessionStarted) { s.OutputStyle = nil }, nil, Unk, "output style"},
		{"H1b direct provider null is ok", H1b, func(s *record.SessionStarted) { s.OutputStyle = nil }, func(l *Launch) { l.Class = "direct_provider" }, OK, ""},
		{"H1b empty is the default", H1b, func(s *record.SessionStarted) { s.OutputStyle = sp("") }, nil, OK, ""},
		{"H1b the word null is the default", H1b, func(s *record.SessionStarted) { s.OutputStyle = sp("null") }, nil, OK, ""},
		{"H1b another style is a gap", H1b, func(s *record.SessionStarted) { s.OutputStyle = sp("Learning") }, nil, Gap, `"Learning"`},
		{"H4 null is unk", H4, func(s *record.SessionStarted) { s.CredentialSource = nil }, nil, Unk, ""},
		{"H4 a key without a declaration is a gap", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("ANTHROPIC_API_KEY") }, nil, Gap, "names an API key"},
		{"H4 normalised: 'User Key' names a key", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("User Key") }, nil, Gap, ""},
		{"H4 nothing declared reads as none", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("apiKeyHelper") }, func(l *Launch) { l.Credentials = "" }, Gap, "--credentials none"},
		{"H4 a declared key that is named is ok", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("ANTHROPIC_API_KEY") }, func(l *Launch) { l.Credentials = "api-key" }, OK, ""},
		{"H4 a declared key the record does not name is a gap", H4, nil, func(l *Launch) { l.Credentials = "api-key" }, Gap, "names no key"},
		{"H4 none: the launch's own stand-in is no key", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("apiKeyHelper") }, func(l *Launch) { l.Credentials = "none"; l.StandInCredential = "apiKeyHelper" }, OK, "metaharness's stand-in"},
		{"H4 none: another source than the stand-in is a gap", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("ANTHROPIC_API_KEY") }, func(l *Launch) { l.Credentials = "none"; l.StandInCredential = "apiKeyHelper" }, Gap, "names an API key"},
		{"H4 loopback: a placeholder key is ok", H4, func(s *record.SessionStarted) { s.CredentialSource = sp("ANTHROPIC_API_KEY") }, func(l *Launch) { l.Credentials = "loopback" }, OK, "placeholder"},
		{"H5 null is unk, never zero", H5, func(s *record.SessionStarted) { s.MCPServers = nil }, nil, Unk, "absent is not zero"},
		{"H5 an empty list against none planned is ok", H5, func(s *record.SessionStarted) { s.MCPServers = []record.MCPServer{} }, func(l *Launch) { l.PlannedMCPServers = nil }, OK, "none"},
		{"H5 an unplanned server is a gap", H5, func(s *record.SessionStarted) { s.MCPServers = append(s.MCPServers, record.MCPServer{Name: "github"}) }, nil, Gap, "unplanned: github"},
		{"H5 an unnamed server is named <unnamed>", H5, func(s *record.SessionStarted) { s.MCPServers = append(s.MCPServers, record.MCPServer{}) }, nil, Gap, "unplanned: <unnamed>"},
		{"H5 the planned server absent is a gap", H5, func(s *record.SessionStarted) { s.MCPServers = []record.MCPServer{} }, nil, Gap, "absent: metaharness"},
		{"H7 null cwd is unk", H7, func(s *record.SessionStarted) { s.Cwd = nil }, nil, Unk, ""},
		{"H7 no planned cwd is unk", H7, nil, func(l *Launch) { l.PlannedCwd = "" }, Unk, "planned none"},
		{"H7 a spelling of the same directory is ok", H7, func(s *record.SessionStarted) { s.Cwd = sp("/scratch/./w/") }, nil, OK, ""},
		{"H7 another directory is a gap", H7, func(s *record.SessionStarted) { s.Cwd = sp("/home/op") }, nil, Gap, "not the planned directory"},
		{"H7 unavailable under --cwd is a gap whatever the record says", H7, func(s *record.SessionStarted) {
			s.Hermetic.Unavailable = []record.RowWhy{{Row: H7.String(), Why: "--cwd /repo: the run could write to the operator's tree"}}
		}, nil, Gap, "could write to the operator's tree"},
		{"H7 declared and the record agrees is ok", H7, func(s *record.SessionStarted) {
			s.Hermetic.Declared = []record.RowWhat{{Row: H7.String(), What: "the caller's copy"}}
		}, nil, OK, "declared: the caller's copy"},
		{"H7 declared never stands in for the record", H7, func(s *record.SessionStarted) {
			s.Hermetic.Declared = []record.RowWhat{{Row: H7.String(), What: "the caller's copy"}}
			s.Cwd = nil
		}, nil, Unk, "declared: the caller's copy"},
		{"H9 null is unk", H9, func(s *record.SessionStarted) { s.HarnessVersion = nil }, nil, Unk, ""},
		{"H9 no pin is unk", H9, nil, func(l *Launch) { l.Pins = nil }, Unk, "no pin"},
		{"H9 off the pin is a gap", H9, func(s *record.SessionStarted) { s.HarnessVersion = sp("2.1.400") }, nil, Gap, "off the pin 2.1.328"},
		{"H10 a digest is ok and named", H10, func(s *record.SessionStarted) { s.InputsDigest = sp("abc") }, nil, OK, "sha256:abc"},
		{"H10 unavailable is a gap", H10, func(s *record.SessionStarted) {
			s.Hermetic.Unavailable = []record.RowWhy{{Row: H10.String(), Why: "no digest"}}
		}, nil, Gap, "no digest"},
		{"H2 not mentioned is unk", H2, func(s *record.SessionStarted) { s.Hermetic.Imposed = s.Hermetic.Imposed[3:] }, nil, Unk, "does not mention it"},
		{"H3 not mentioned is unk", H3, func(s *record.SessionStarted) { s.Hermetic.Imposed = nil }, nil, Unk, "does not mention it"},
		{"H3 no attestation is unk", H3, func(s *record.SessionStarted) { s.Hermetic = nil }, nil, Unk, "no attestation"},
		{"H8 unavailable outranks imposed", H8, func(s *record.SessionStarted) {
			s.Hermetic.Unavailable = []record.RowWhy{{Row: H8.String(), Why: "--bare"}}
		}, nil, Gap, "could not impose it: --bare"},
		{"H11 declared is unk: a declaration is not an imposition", H11, func(s *record.SessionStarted) {
			s.Hermetic.Imposed = nil
			s.Hermetic.Declared = []record.RowWhat{{Row: H11.String(), What: "trust me"}}
		}, nil, Unk, "declared by the caller"},
		{"H12 imposed with nothing refused", H12, nil, nil, OK, "no egress attempt was refused"},
		{"H12 not mentioned is unk and advisory", H12, func(s *record.SessionStarted) { s.Hermetic.Imposed = nil }, nil, Unk, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := cleanStarted()
			if c.started != nil {
				c.started(s)
			}
			l := cleanLaunch()
			if c.launch != nil {
				c.launch(&l)
			}
			r := rowOf(t, Evaluate(stream(s, ended()), l), c.row)
			if r.Verdict != c.verdict || !strings.Contains(r.Detail, c.detail) {
				t.Errorf("%s: %s — %s\nwant %s with %q in the detail", c.row, r.Verdict, r.Detail, c.verdict, c.detail)
			}
		})
	}
}

func TestSameDirComparesDirectoriesNotSpellings(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "copy")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{real, real + "/", true},
		{real, link, true},
		{real, filepath.Join(dir, ".", "copy"), true},
		{real, other, false},
		{"/no/such/a", "/no/such/b", false},
		{"/no/such/a", "/no/such/a/.", true},
	} {
		if got := SameDir(c.a, c.b); got != c.want {
			t.Errorf("SameDir(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// And through the row: the record names the symlink, the plan the real
	// directory (a b10x loop reports its cwd in its own spelling).
	s := cleanStarted()
	s.Cwd = &link
	l := cleanLaunch()
	l.PlannedCwd = real
	if r := rowOf(t, Evaluate(stream(s, ended()), l), H7); r.Verdict != OK {
		t.Errorf("H7 through a symlink: %s — %s", r.Verdict, r.Detail)
	}
}

func TestEgressRefusalsAreListedAndBounded(t *testing.T) {
	evs := []record.Event{cleanStarted()}
	for i := range 12 {
		evs = append(evs, &record.Warning{Code: EgressRefused, Message: "CONNECT host" + string(rune('a'+i)) + ":443"})
	}
	evs = append(evs, &record.Warning{Code: "OTHER", Message: "not egress"}, ended())
	r := rowOf(t, Evaluate(stream(evs...), cleanLaunch()), H12)
	if r.Verdict != OK || r.Severity != Advisory {
		t.Errorf("H12 %s %s, want an ok advisory row: refusals prove the gate held", r.Verdict, r.Severity)
	}
	for _, want := range []string{"12 egress attempt(s) refused", "CONNECT hosta:443", "CONNECT hostj:443", "and 2 more"} {
		if !strings.Contains(r.Detail, want) {
			t.Errorf("H12 detail %q lacks %q", r.Detail, want)
		}
	}
	if strings.Contains(r.Detail, "not egress") || strings.Contains(r.Detail, "hostk") {
		t.Errorf("H12 detail lists more than it should: %q", r.Detail)
	}
}

func TestNoOpeningRecordIsUnkOnEveryRow(t *testing.T) {
	e := Evaluate(stream(&record.Text{Text: "hi"}, ended()), cleanLaunch())
	for _, r := range e.Rows {
		if r.Verdict != Unk {
			t.Errorf("%s: %s, want unk", r.ID, r.Verdict)
		}
	}
	if e.WithheldStated || e.PluginsStated {
		t.Error("with no opening record, withheld and plugins are not stated")
	}
	if got := e.Exit(true, nil); got != 3 {
		t.Errorf("exit %d, want 3", got)
	}
}

func TestFirstOpeningAndTerminalRecordsCount(t *testing.T) {
	second := cleanStarted()
	second.HarnessVersion = sp("9.9.9")
	failed := ended()
	failed.IsError = new(bool)
	*failed.IsError = true
	e := Evaluate(stream(cleanStarted(), second, ended(), failed), cleanLaunch())
	if r := rowOf(t, e, H9); r.Verdict != OK {
		t.Errorf("H9 read a later opening record: %s", r.Detail)
	}
	if e.Terminal != TerminalOK {
		t.Errorf("terminal %s, want the first session.ended (ok)", e.Terminal)
	}
}

func TestCensusRecountedWithoutTerminalCensus(t *testing.T) {
	d := func(id, dec, by, seam string) *record.ToolDecided {
		return &record.ToolDecided{CallID: id, Decision: record.Decision{Decision: dec}, DecidedBy: by, Seam: seam}
	}
	noCensus := ended()
	noCensus.Census = nil
	// The requests denied before any decision are counted apart, by the
	// warnings that recorded them.
	notOnRecord := func() *record.Warning { return &record.Warning{Code: DecisionNotOnRecord, Message: "call c9"} }
	e := Evaluate(stream(cleanStarted(), d("1", "allow", "frame", "hook"), d("2", "deny", "deadline", "hook"),
		d("3", "replace", "embedder", "owned_tool"), d("4", "abstain", "adapter", "none"), notOnRecord(), notOnRecord(),
		&record.Warning{Code: DecisionNotOnWire, Message: "call c8"}, noCensus), cleanLaunch())
	c := e.Census
	if c.Allowed != 1 || c.Denied != 1 || c.Replaced != 1 || c.Abstained != 1 || c.NotOnRecord != 2 || c.NotOnWire != 1 ||
		c.BySeam["hook"] != 2 || c.BySeam["owned_tool"] != 1 || c.ByDecider["deadline"] != 1 || e.CensusSource != "tool.decided events" {
		t.Errorf("census %+v from %s", c, e.CensusSource)
	}
	// A terminal census is taken as it stands, not recounted.
	e = Evaluate(stream(cleanStarted(), d("1", "deny", "frame", "hook"), ended()), cleanLaunch())
	if e.Census.Allowed != 1 || e.Census.Denied != 0 || e.CensusSource != "terminal record" {
		t.Errorf("census %+v from %s, want the terminal record's", e.Census, e.CensusSource)
	}
}

// TestKilledAfterTheTerminalRecord: a vendor another process killed after
// it wrote its terminal record (an agent forging a result, then killing
// its parent) never ends the run as completed: the terminal is an error,
// and nobody found out (exit 3).
func TestKilledAfterTheTerminalRecord(t *testing.T) {
	lines := stream(cleanStarted(), ended())
	closed := lines[len(lines)-1].Event.(*record.StreamClosed)
	sig := 9
	closed.Reason, closed.Process = record.ReasonKilled, &record.Process{Kind: record.ProcessSignaled, Signal: &sig}
	e := Evaluate(lines, cleanLaunch())
	if e.Terminal != TerminalError || !strings.Contains(e.TerminalDetail, "signal SIGKILL") {
		t.Errorf("terminal %s (%s), want an error naming the signal", e.Terminal, e.TerminalDetail)
	}
	for _, audited := range []bool{false, true} {
		if got := e.Exit(audited, nil); got != exit.Unknown {
			t.Errorf("audited %t: exit %d, want %d", audited, got, exit.Unknown)
		}
	}
}

// TestTheHookCheckIsH8: on a kind whose calls are decided at the vendor's
// own hook and held to its record (b10x), each finding of that check is a
// gap on H8, the first one named; without one H8 stands as imposed.
func TestTheHookCheckIsH8(t *testing.T) {
	for _, code := range []string{DecisionNotOnRecord, HookSkipped, HookOverruled, DecisionForged} {
		evs := []record.Event{cleanStarted(), &record.Warning{Code: code, Message: "call c1"}, &record.Warning{Code: HookSkipped, Message: "call c2"}, ended()}
		r := rowOf(t, Evaluate(stream(evs...), cleanLaunch()), H8)
		if r.Verdict != Gap || r.Detail != code+": call c1" {
			t.Errorf("%s: H8 %s — %s", code, r.Verdict, r.Detail)
		}
	}
	r := rowOf(t, Evaluate(stream(cleanStarted(), &record.Warning{Code: "hook-refused", Message: "the caller's hook"}, ended()), cleanLaunch()), H8)
	if r.Verdict != OK {
		t.Errorf("a hook's own refusal is no finding: H8 %s — %s", r.Verdict, r.Detail)
	}
}

// TestH13NamesTheFirstCallNoSeamDecided: under frame, the first call on
// the record (by its first tool.requested) that no seam decided and that
// did not end as the vendor's refusal (its last result an error) is H13's
// gap; a decision before its request, a repeated request of a decided
// call and a refusal are not.
func TestH13NamesTheFirstCallNoSeamDecided(t *testing.T) {
	yes, no := true, false
	req := func(id, name string) record.Event { return &record.ToolRequested{CallID: id, Name: name, Seam: "hook"} }
	dec := func(id string) record.Event {
		return &record.ToolDecided{CallID: id, Decision: record.AllowDecision(), DecidedBy: "frame", Seam: "hook"}
	}
	res := func(id string, isErr *bool) record.Event { return &record.ToolResult{CallID: id, IsError: isErr} }
	base := []record.Event{cleanStarted(),
		req("c1", "Read"), dec("c1"),
		dec("c2"), req("c2", "Grep"),
		req("c3", "Bash"), res("c3", &yes),
		req("c1", "Read"),
	}
	for _, c := range []struct {
		name string
		more []record.Event
		want string
	}{
		{"none undecided", nil, "every decided call (2) and every model output recorded (0 texts, 4 calls) matched the wire"},
		{"a refusal taken back", []record.Event{req("c4", "Write"), res("c4", &yes), req("c5", "Edit"), res("c4", &no)}, "call c4 (Write) is on the record"},
		{"the later one", []record.Event{req("c5", "Edit"), req("c6", "Glob"), dec("c6")}, "call c5 (Edit) is on the record"},
	} {
		evs := append(append(append([]record.Event{}, base...), c.more...), ended())
		r := rowOf(t, Evaluate(stream(evs...), cleanLaunch()), H13)
		if !strings.Contains(r.Detail, c.want) {
			t.Errorf("%s: H13 %s: %s, want %q", c.name, r.Verdict, r.Detail, c.want)
		}
	}
}
