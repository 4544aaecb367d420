package attest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/record"
)

// Launch holds the facts the launch declared that a stream cannot carry: what
// the record rows are compared with. The launcher fills it from the run's
// flags and plan; a replay fills it from the same flags.
type Launch struct {
	// Kind is claude, codex or b10x.
	Kind string `json:"kind"`
	// Class is harness or direct_provider; empty reads the opening record's
	// adapter_class.
	Class string `json:"class,omitempty"`
	// Hermetic is the --hermetic mode: off, on or strict (empty reads off).
	Hermetic string `json:"hermetic"`
	// Audit is --audit. An audit is owed under --audit or --hermetic strict.
	Audit bool `json:"audit"`
	// Plugins are the names of the declared plugins (--plugin-dir, --plugin),
	// in any order; H1a compares the loaded set with them.
	Plugins []string `json:"plugins"`
	// Credentials is --credentials (empty reads as none declared).
	Credentials Credentials `json:"credentials"`
	// PlannedCwd is the directory the child was started in; H7 compares the
	// record's cwd with it as a directory, not as a spelling.
	PlannedCwd string `json:"planned_cwd"`
	// PlannedMCPServers are the MCP servers the launch gave the child: empty,
	// or ["metaharness"] under a catalogue or the owned surface.
	PlannedMCPServers []string `json:"planned_mcp_servers"`
	// StandInCredential is the credential source through which the launch
	// handed the child a fixed word that is no credential (launcher's
	// Plan.StandInCredential); the record naming it is no key.
	StandInCredential string `json:"stand_in_credential,omitempty"`
	// Pins are the vendor versions the kind is pinned to (H9).
	Pins []string `json:"pins"`
}

// Credentials is --credentials: how the child reaches the model. H4 judges
// the record's credential source by it.
type Credentials string

const (
	CredentialsNone          Credentials = "none"
	CredentialsAPIKey        Credentials = "api-key"
	CredentialsLoopback      Credentials = "loopback"
	CredentialsOperatorLogin Credentials = "operator-login"
)

// AuditOwed reports whether the run owes an audit report: --audit or
// --hermetic strict.
func (l Launch) AuditOwed() bool { return l.Audit || l.Hermetic == ModeStrict }

// Terminal record states.
const (
	TerminalNone  = "none"  // no session.ended in the stream
	TerminalOK    = "ok"    // session.ended, not an error
	TerminalError = "error" // session.ended with is_error true
)

// Evaluation is everything the floor read from one stream.
type Evaluation struct {
	Mode  string // the hermetic mode the report names
	Rows  []Row  // every row of Rows, in order
	RunID string // the run id the stream's lines carry

	// Attestation is the claim the opening record carried, nil when none.
	Attestation *record.Attestation

	Census record.Census
	// CensusSource says where the census came from: "terminal record" or
	// "tool.decided events" (recounted when no terminal census exists).
	CensusSource string

	// Withheld is the opening record's list; WithheldStated is false when
	// the harness did not say (null, or no opening record).
	Withheld       []record.Withheld
	WithheldStated bool

	Stream record.Completeness

	// Plugins are the attestation's installed plugins; PluginsStated is
	// false when the stream carries no attestation.
	Plugins       []record.InstalledPlugin
	PluginsStated bool

	Terminal       string // TerminalNone, TerminalOK or TerminalError
	TerminalDetail string // the terminal record's own words, when it failed

	// Process is stream.closed.process, nil when the stream has none.
	Process *record.Process
}

// The warning codes of what the wire check found (H13): a decision
// request for a call the model never made on the wire (or made once and
// asked about twice, or with another name or input), a vendor line
// claiming model output the wire does not hold, a call the model made that
// no seam decided, a wire view too full to check against, and a model
// request through the proxy that was not the vendor's (refused, never
// answered: one of its commands making calls of its own).
const (
	DecisionNotOnWire     = "DECISION_NOT_ON_WIRE"
	RecordNotOnWire       = "RECORD_NOT_ON_WIRE"
	CallNotDecided        = "CALL_NOT_DECIDED"
	WireUnchecked         = "WIRE_UNCHECKED"
	ModelRequestNotVendor = "MODEL_REQUEST_NOT_VENDOR"
)

// wireCodes are the codes H13 fails on.
var wireCodes = []string{DecisionNotOnWire, RecordNotOnWire, CallNotDecided, WireUnchecked, ModelRequestNotVendor}

// The warning codes of the hook check (H8), on a kind whose calls
// metaharness decides at the vendor's own hook and whose record it holds
// those decisions to (b10x, whose wire nothing sees): a decision request
// for a call the vendor's record does not show (or shows, and was
// answered already), a call the vendor ran without the hook's answer, one
// it ran though the hook denied it, and a call's one answer taken by a
// request the record shows was not the vendor's hook.
const (
	DecisionNotOnRecord = "DECISION_NOT_ON_RECORD"
	HookSkipped         = "HOOK_SKIPPED"
	HookOverruled       = "HOOK_OVERRULED"
	DecisionForged      = "DECISION_FORGED"
)

// hookCodes are the codes H8 fails on.
var hookCodes = []string{DecisionNotOnRecord, HookSkipped, HookOverruled, DecisionForged}

// GitSealBroken: in a --cwd run, something the operator's git runs or
// obeys (a git directory's config or hooks, a worktree's links, a new
// submodule) is not what it was at the start; H7 fails on it.
const GitSealBroken = "GIT_SEAL_BROKEN"

// EgressRefused is the warning code the launcher writes for each egress
// attempt the loopback proxy's gate refused; its message names the method
// and the host. H12 lists them.
const EgressRefused = "EGRESS_REFUSED"

// maxListed bounds how many items one row detail names.
const maxListed = 10

// Evaluate reads a recorded stream (in order) against the launch's declared
// facts. It never fails: what the stream does not say is unk.
func Evaluate(lines []*record.EventLine, l Launch) *Evaluation {
	var sc Scan
	for _, line := range lines {
		sc.Add(line)
	}
	return sc.Evaluate(l)
}

// Scan reads a stream a line at a time and keeps what Evaluate judges, not
// the lines: the first opening and terminal records, the marker, the first
// warning of each check, counts, and of the tool calls what H13 needs (the
// ids decided, and each call not decided yet with its name). A run's Tap
// feeds one as the stream is written; its memory grows with the tool calls
// by an id each, never with the events' payloads.
type Scan struct {
	s        scanned
	complete record.CompletenessCheck
	runID    string
	lines    int
}

// Add takes the stream's next line; a line that could not be read is added
// as an empty EventLine, which keeps its place.
func (sc *Scan) Add(line *record.EventLine) {
	if sc.lines == 0 {
		sc.runID = line.Run
	}
	sc.lines++
	sc.complete.Add(line)
	sc.s.add(line)
}

// Evaluate judges the lines added so far.
func (sc *Scan) Evaluate(l Launch) *Evaluation {
	s := &sc.s
	e := &Evaluation{
		Mode:     l.Hermetic,
		Stream:   sc.complete.Result(),
		Terminal: TerminalNone,
		RunID:    sc.runID,
	}
	if e.Mode == "" {
		e.Mode = ModeOff
	}
	e.Attestation = s.attestation()
	if s.ended != nil {
		e.Terminal = TerminalOK
		if s.ended.IsError != nil && *s.ended.IsError {
			e.Terminal = TerminalError
			e.TerminalDetail = terminalWords(s.ended)
		}
	}
	if s.closed != nil {
		e.Process = s.closed.Process
		if e.Terminal == TerminalOK && s.closed.Reason == record.ReasonKilled && s.closed.Process != nil && s.closed.Process.Kind == record.ProcessSignaled {
			// The vendor died of a signal nobody in the run sent after
			// its terminal record: that record is not its own last word.
			e.Terminal = TerminalError
			e.TerminalDetail = "the vendor was killed (" + ChildExit(s.closed.Process) + ") by a signal metaharness did not send, after its terminal record"
		}
	}
	e.Census, e.CensusSource = census(s)
	if s.started != nil && s.started.Withheld != nil {
		e.Withheld, e.WithheldStated = s.started.Withheld, true
	}
	if e.Attestation != nil {
		e.Plugins, e.PluginsStated = e.Attestation.InstalledPlugins, true
	}
	for _, spec := range Rows {
		v, d := judge(spec, s, l)
		e.Rows = append(e.Rows, Row{RowSpec: spec, Verdict: v, Detail: d})
	}
	return e
}

// scanned is what evaluation reads from a stream: the first opening record,
// the first terminal record, the marker, decisions and refused egress.
type scanned struct {
	started *record.SessionStarted
	ended   *record.SessionEnded
	closed  *record.StreamClosed
	// The census recounted from the tool.decided events, for a stream
	// whose terminal record has none.
	decisions record.Census
	decidedN  int
	egress    []string // the first maxListed refused egress attempts
	egressN   int
	// H13: the ids of the calls some seam decided; each call on the record
	// (tool.requested) not decided yet, with its name and its place among
	// them; the last result's error flag of each id not decided yet; and
	// the counts of calls and of texts recorded as the model's.
	decided    map[string]bool
	undecided  map[string]pendingCall
	errored    map[string]bool
	requestedN int
	texts      int
	// The first warning of the wire check.
	wire *record.Warning
	// H8: the first warning of the hook check.
	hook *record.Warning
	// H7: the first change to what the operator's git runs.
	gitSeal *record.Warning
	// requestsNotOnWire and requestsNotOnRecord count the
	// DecisionNotOnWire and DecisionNotOnRecord warnings.
	requestsNotOnWire, requestsNotOnRecord int
}

// pendingCall is a call on the record no seam has decided yet.
type pendingCall struct {
	place int // among the calls on the record, from 0
	name  string
}

func (s *scanned) add(line *record.EventLine) {
	switch ev := line.Event.(type) {
	case *record.SessionStarted:
		if s.started == nil {
			s.started = ev
		}
	case *record.SessionEnded:
		if s.ended == nil {
			s.ended = ev
		}
	case *record.StreamClosed:
		s.closed = ev
	case *record.ToolDecided:
		s.decidedN++
		s.decisions.Count(ev.Decision.Decision, ev.Seam, ev.DecidedBy)
		if s.decided == nil {
			s.decided = map[string]bool{}
		}
		s.decided[ev.CallID] = true
		delete(s.undecided, ev.CallID)
		delete(s.errored, ev.CallID)
	case *record.ToolRequested:
		if _, waiting := s.undecided[ev.CallID]; !waiting && !s.decided[ev.CallID] {
			if s.undecided == nil {
				s.undecided = map[string]pendingCall{}
			}
			s.undecided[ev.CallID] = pendingCall{place: s.requestedN, name: ev.Name}
		}
		s.requestedN++
	case *record.ToolResult:
		if !s.decided[ev.CallID] {
			if s.errored == nil {
				s.errored = map[string]bool{}
			}
			s.errored[ev.CallID] = ev.IsError != nil && *ev.IsError
		}
	case *record.Text:
		s.texts++
	case *record.Warning:
		switch {
		case ev.Code == EgressRefused:
			if s.egressN++; len(s.egress) < maxListed {
				s.egress = append(s.egress, ev.Message)
			}
		case ev.Code == GitSealBroken:
			if s.gitSeal == nil {
				s.gitSeal = ev
			}
		case slices.Contains(hookCodes, ev.Code):
			if s.hook == nil {
				s.hook = ev
			}
			if ev.Code == DecisionNotOnRecord {
				s.requestsNotOnRecord++
			}
		case slices.Contains(wireCodes, ev.Code):
			if s.wire == nil {
				s.wire = ev
			}
			if ev.Code == DecisionNotOnWire {
				s.requestsNotOnWire++
			}
		}
	}
}

func (s *scanned) attestation() *record.Attestation {
	if s.started == nil {
		return nil
	}
	return s.started.Hermetic
}

func terminalWords(end *record.SessionEnded) string {
	var parts []string
	for _, f := range []struct {
		name string
		v    *string
	}{{"subtype", end.Subtype}, {"terminal_reason", end.TerminalReason}, {"stop_reason", end.StopReason}} {
		if f.v != nil && *f.v != "" {
			parts = append(parts, f.name+" "+*f.v)
		}
	}
	if end.APIErrorStatus != nil {
		parts = append(parts, fmt.Sprintf("api_error_status %d", *end.APIErrorStatus))
	}
	return strings.Join(parts, ", ")
}

// census takes the terminal record's census when there is one, else the
// one recounted from the tool.decided events.
func census(s *scanned) (record.Census, string) {
	if s.ended != nil && s.ended.Census != nil {
		return *s.ended.Census, "terminal record"
	}
	c := s.decisions
	if c.BySeam == nil {
		c.BySeam, c.ByDecider = map[string]uint64{}, map[string]uint64{}
	}
	c.NotOnWire = uint64(s.requestsNotOnWire)
	c.NotOnRecord = uint64(s.requestsNotOnRecord)
	return c, "tool.decided events"
}

// judge applies one row's rule. Precedence: no opening record is unk for
// every row; a row the attestation lists as unavailable is a gap whatever
// else is true; then the row's own rule.
func judge(spec RowSpec, s *scanned, l Launch) (string, string) {
	if s.started == nil {
		return Unk, "the stream has no opening record (session.started), so nothing it would evidence was recorded"
	}
	att := s.started.Hermetic
	st := stateOf(att, spec.ID)
	if st.unavailable != nil {
		return Gap, "could not impose it: " + st.unavailable.Why
	}
	switch spec.ID {
	case H1a:
		return judgePlugins(s.started, l)
	case H1b:
		return judgeOutputStyle(s.started, l)
	case H4:
		v, d := judgeCredential(s.started, l)
		if st.imposed != nil {
			// The record says where the child's credential came from; the
			// launch says what kept the real one out of its reach.
			d += "; metaharness imposed: " + st.imposed.How
		}
		return v, d
	case H5:
		return judgeMCP(s.started, l)
	case H7:
		v, d := judgeCwd(s.started, l, st.declared)
		if s.gitSeal != nil && v != Unk {
			return Gap, s.gitSeal.Code + ": " + s.gitSeal.Message + "; " + d
		}
		return v, d
	case H9:
		return judgeVersion(s.started, l)
	case H10:
		if d := s.started.InputsDigest; d != nil && *d != "" {
			return OK, "the copied inputs are digested: sha256:" + *d
		}
		return OK, "no input tree was copied, so nothing could move"
	case H8:
		v, d := fromAttestation(att, st)
		if v == OK && s.hook != nil {
			return Gap, s.hook.Code + ": " + s.hook.Message
		}
		return v, d
	case H12:
		v, d := fromAttestation(att, st)
		return v, d + "; " + egressDetail(s.egress, s.egressN)
	case H13:
		v, d := fromAttestation(att, st)
		if v != OK {
			return v, d
		}
		return judgeWire(s, att.Decisions)
	}
	return fromAttestation(att, st)
}

// judgeWire is H13 once metaharness claims the wire is read: a gap at the
// first mismatch the run recorded, or, under frame or ask, at the first
// call on the record that no seam decided and that did not end as the
// vendor's refusal (an error result); ok otherwise.
func judgeWire(s *scanned, decisions string) (string, string) {
	if s.wire != nil {
		return Gap, s.wire.Code + ": " + s.wire.Message
	}
	if decisions == "frame" || decisions == "ask" {
		var first *pendingCall
		var id string
		for callID, c := range s.undecided {
			if s.errored[callID] || (first != nil && first.place < c.place) {
				continue
			}
			first, id = &c, callID
		}
		if first != nil {
			return Gap, fmt.Sprintf("call %s (%s) is on the record, no seam decided it under --decisions %s, and it did not end as the vendor's refusal", id, first.name, decisions)
		}
	}
	return OK, fmt.Sprintf("every decided call (%d) and every model output recorded (%d texts, %d calls) matched the wire", s.decidedN, s.texts, s.requestedN)
}

// rowState is where the attestation lists one row.
type rowState struct {
	imposed     *record.RowHow
	unavailable *record.RowWhy
	declared    *record.RowWhat
}

func stateOf(att *record.Attestation, row RowID) rowState {
	id := row.id
	var st rowState
	if att == nil {
		return st
	}
	for i := range att.Imposed {
		if att.Imposed[i].Row == id && st.imposed == nil {
			st.imposed = &att.Imposed[i]
		}
	}
	for i := range att.Unavailable {
		if att.Unavailable[i].Row == id && st.unavailable == nil {
			st.unavailable = &att.Unavailable[i]
		}
	}
	for i := range att.Declared {
		if att.Declared[i].Row == id && st.declared == nil {
			st.declared = &att.Declared[i]
		}
	}
	return st
}

// fromAttestation is the rule of a launch or effect row: imposed is ok; a
// declaration never stands in for an imposition, so declared is unk, and so
// is silence.
func fromAttestation(att *record.Attestation, st rowState) (string, string) {
	switch {
	case att == nil:
		return Unk, "the opening record carries no attestation"
	case st.imposed != nil:
		return OK, "metaharness imposed it: " + st.imposed.How
	case st.declared != nil:
		return Unk, "declared by the caller, not imposed: " + st.declared.What
	}
	return Unk, "the attestation does not mention it"
}

func directProvider(started *record.SessionStarted, l Launch) bool {
	class := l.Class
	if class == "" {
		class = started.AdapterClass
	}
	return class == "direct_provider"
}

func judgePlugins(started *record.SessionStarted, l Launch) (string, string) {
	if started.Plugins == nil {
		if directProvider(started, l) && len(l.Plugins) == 0 {
			return OK, "a direct provider with no declared plugin loads none"
		}
		return Unk, "the opening record does not say which plugins loaded"
	}
	var loaded, builtin []string
	for _, p := range started.Plugins {
		if isBuiltin(p) {
			builtin = append(builtin, p.Name)
			continue
		}
		loaded = append(loaded, p.Name)
	}
	note := ""
	if len(builtin) > 0 {
		note = " (built into the vendor binary, not counted: " + listOrNone(builtin) + ")"
	}
	if extra, missing := setDiff(loaded, l.Plugins); len(extra)+len(missing) > 0 {
		return Gap, "loaded " + listOrNone(loaded) + ", declared " + listOrNone(l.Plugins) + differences(extra, missing, "undeclared", "not loaded") + note
	}
	return OK, "loaded exactly the declared set: " + listOrNone(loaded) + note
}

// isBuiltin reports a plugin the vendor binary carries itself (Claude Code
// 2.1.328 reports them with source "<name>@builtin"): it ships with the
// pinned version, not with a config home, so H1a does not count it.
func isBuiltin(p record.Plugin) bool {
	return p.Source != nil && strings.HasSuffix(*p.Source, "@builtin")
}

func judgeOutputStyle(started *record.SessionStarted, l Launch) (string, string) {
	if started.OutputStyle == nil {
		if directProvider(started, l) {
			return OK, "a direct provider has no output style"
		}
		return Unk, "the opening record does not name the output style"
	}
	switch style := strings.TrimSpace(*started.OutputStyle); strings.ToLower(style) {
	case "default", "null", "":
		return OK, fmt.Sprintf("output style %q", style)
	default:
		return Gap, fmt.Sprintf("output style %q is not the default: something outside the scratch home chose it", style)
	}
}

// judgeCredential: a source that names a key (contains "api" or "key" once
// normalised) is a gap unless the run declared one; a declared api-key that
// the record does not name is a gap too. Under loopback the child holds a
// placeholder, never the key, so either reading is ok.
func judgeCredential(started *record.SessionStarted, l Launch) (string, string) {
	if started.CredentialSource == nil {
		return Unk, "the opening record does not name its credential source"
	}
	src := *started.CredentialSource
	norm := strings.NewReplacer("_", "-", " ", "-").Replace(strings.ToLower(strings.TrimSpace(src)))
	namesKey := strings.Contains(norm, "api") || strings.Contains(norm, "key")
	declared := l.Credentials
	if declared == "" {
		declared = CredentialsNone
	}
	switch {
	case declared == CredentialsLoopback:
		return OK, fmt.Sprintf("credential source %q under --credentials loopback: the child holds a placeholder, the key stays with the proxy", src)
	case declared == CredentialsNone && l.StandInCredential != "" && src == l.StandInCredential:
		return OK, fmt.Sprintf("credential source %q under --credentials none is metaharness's stand-in: a fixed word that is no credential, and no key variable", src)
	case namesKey && declared != CredentialsAPIKey:
		return Gap, fmt.Sprintf("credential source %q names an API key, but the run declared --credentials %s", src, declared)
	case !namesKey && declared == CredentialsAPIKey:
		return Gap, fmt.Sprintf("the run declared --credentials api-key, but the credential source %q names no key", src)
	}
	return OK, fmt.Sprintf("credential source %q matches --credentials %s", src, declared)
}

func judgeMCP(started *record.SessionStarted, l Launch) (string, string) {
	if started.MCPServers == nil {
		return Unk, "the opening record does not list its MCP servers (absent is not zero)"
	}
	var got []string
	for _, m := range started.MCPServers {
		name := m.Name
		if name == "" {
			name = "<unnamed>"
		}
		got = append(got, name)
	}
	if extra, missing := setDiff(got, l.PlannedMCPServers); len(extra)+len(missing) > 0 {
		return Gap, "servers " + listOrNone(got) + ", planned " + listOrNone(l.PlannedMCPServers) + differences(extra, missing, "unplanned", "absent")
	}
	return OK, "exactly the planned servers: " + listOrNone(got)
}

// judgeCwd compares the record's cwd with the planned one as directories.
// Under --scratch-cwd the attestation declares the directory; the
// declaration is named but never stands in for the record.
func judgeCwd(started *record.SessionStarted, l Launch, declared *record.RowWhat) (string, string) {
	prefix := ""
	if declared != nil {
		prefix = "declared: " + declared.What + "; "
	}
	switch {
	case started.Cwd == nil || *started.Cwd == "":
		return Unk, prefix + "the opening record does not say where the child ran"
	case l.PlannedCwd == "":
		return Unk, prefix + fmt.Sprintf("the record's cwd is %s but the launch planned none to compare with", *started.Cwd)
	case !SameDir(*started.Cwd, l.PlannedCwd):
		return Gap, prefix + fmt.Sprintf("the record's cwd %s is not the planned directory %s", *started.Cwd, l.PlannedCwd)
	}
	return OK, prefix + "the record's cwd is the planned directory " + l.PlannedCwd
}

// SameDir reports whether a and b name one directory: the same spelling once
// cleaned, or the same file on disk (symlinks and bind mounts read the same).
func SameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && sa.IsDir() && os.SameFile(sa, sb)
}

func judgeVersion(started *record.SessionStarted, l Launch) (string, string) {
	if started.HarnessVersion == nil || strings.TrimSpace(*started.HarnessVersion) == "" {
		return Unk, "the opening record does not name the vendor version"
	}
	v := strings.TrimSpace(*started.HarnessVersion)
	switch {
	case len(l.Pins) == 0:
		return Unk, "observed " + v + ", but the kind declares no pin to compare with"
	case slices.Contains(l.Pins, v):
		return OK, "observed " + v + ", on the pin"
	}
	return Gap, "observed " + v + ", off the pin " + strings.Join(l.Pins, ", ")
}

func egressDetail(first []string, n int) string {
	if n == 0 {
		return "no egress attempt was refused"
	}
	return fmt.Sprintf("%d egress attempt(s) refused: %s", n, boundedOf(first, n, "; "))
}

// setDiff compares two lists as multisets: extra holds each name got has
// more often than want (once per surplus), missing the reverse; both sorted.
func setDiff(got, want []string) (extra, missing []string) {
	count := map[string]int{}
	for _, x := range got {
		count[x]++
	}
	for _, x := range want {
		count[x]--
	}
	for _, x := range sortedSet(append(slices.Clone(got), want...)) {
		for n := count[x]; n > 0; n-- {
			extra = append(extra, x)
		}
		for n := count[x]; n < 0; n++ {
			missing = append(missing, x)
		}
	}
	return extra, missing
}

func sortedSet(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return bounded(sortedSet(xs), ", ")
}

func differences(extra, missing []string, extraWord, missingWord string) string {
	var b strings.Builder
	if len(extra) > 0 {
		b.WriteString("; " + extraWord + ": " + bounded(extra, ", "))
	}
	if len(missing) > 0 {
		b.WriteString("; " + missingWord + ": " + bounded(missing, ", "))
	}
	return b.String()
}

// bounded joins at most maxListed items and says how many it left out.
func bounded(xs []string, sep string) string { return boundedOf(xs, len(xs), sep) }

// boundedOf is bounded for a list of n items of which xs are the first.
func boundedOf(xs []string, n int, sep string) string {
	shown := xs[:min(len(xs), maxListed)]
	out := strings.Join(shown, sep)
	if n > len(shown) {
		out += fmt.Sprintf("%sand %d more", sep, n-len(shown))
	}
	return out
}
