package attest

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// Control is the floor's verdict over the gating rows: gap if any is a gap,
// else unk if any is unk, else ok. Advisory rows never move it.
func (e *Evaluation) Control() string {
	out := OK
	for _, r := range e.Rows {
		switch {
		case r.Severity != Gating:
		case r.Verdict == Gap:
			return Gap
		case r.Verdict == Unk:
			out = Unk
		}
	}
	return out
}

// Exit computes the run's exit code (SPEC §9, reference notes §7).
//
// Audited: any gating gap or the auditor's exit 1 is 1; else no successful
// terminal record, any gating unk or the auditor's exit 3 is 3; else 0. Gap
// outranks unk, and the auditor's other exit codes do not move the result.
//
// Not audited: a successful terminal record is 0, anything else 3; never 1.
//
// A terminal record that says the run failed (session.ended.is_error) is not
// a successful one: the run did not finish its work, so nobody can vouch for
// it, and it exits 3 (an audited run still exits 1 when a gap outranks it).
func (e *Evaluation) Exit(audited bool, aud *AuditorResult) exit.Code {
	finished := exit.OK
	if e.Terminal != TerminalOK {
		finished = exit.Unknown
	}
	if !audited {
		return finished
	}
	return exit.Worst(verdictCode(e.Control()), finished, aud.code())
}

func verdictCode(v string) exit.Code {
	switch v {
	case Gap:
		return exit.Gap
	case Unk:
		return exit.Unknown
	}
	return exit.OK
}

// Conclude writes the audit report to w when the run owes one and returns
// the run's exit code. A run that owes no audit writes nothing.
func (e *Evaluation) Conclude(w io.Writer, audited bool, aud *AuditorResult, child *record.Process) (exit.Code, error) {
	code := e.Exit(audited, aud)
	if !audited {
		return code, nil
	}
	if _, err := io.WriteString(w, e.Report(aud, child)); err != nil {
		return exit.Refused, fmt.Errorf("writing the audit report: %w", err)
	}
	return code, nil
}

// Report renders the audit report (SPEC §9): the rows, the decision census,
// one withheld shape, the stream line, the terminal record, the plugins, the
// auditor line when an auditor ran, and the three closing lines. child is
// how the child ended as the launcher saw it; nil reads stream.closed.process.
func (e *Evaluation) Report(aud *AuditorResult, child *record.Process) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("hermetic verdict (mode %s; the attestation half is metaharness's own claim, not independent evidence)", e.Mode)
	for _, r := range e.Rows {
		line("  %-4s %-3s %-8s %-6s %s — %s", r.ID.Display(), r.Verdict, r.Severity, r.Assertion, r.Label, r.Detail)
	}

	c := e.Census
	line("decision census: allowed=%d denied=%d replaced=%d abstained=%d", c.Allowed, c.Denied, c.Replaced, c.Abstained)
	countLines(&b, "by seam   ", c.BySeam)
	countLines(&b, "by decider", c.ByDecider)
	if c.Allowed+c.Denied+c.Replaced == 0 {
		if c.Abstained == 0 {
			line("  nothing was adjudicated: no call was allowed, denied or replaced")
		} else {
			line("  %d call(s) were adjudicated by nobody: each abstained, so the vendor's own pipeline decided", c.Abstained)
		}
	}
	if e.CensusSource != "terminal record" {
		line("  counted from the tool.decided events: the stream has no terminal census")
	}

	b.WriteString(e.withheldLine() + "\n")
	b.WriteString(e.Stream.Line() + "\n")
	b.WriteString(e.terminalLine() + "\n")
	for _, p := range e.pluginLines() {
		b.WriteString(p + "\n")
	}
	if aud != nil {
		b.WriteString(aud.Line() + "\n")
	}

	if child == nil {
		child = e.Process
	}
	line("child exit: %s", ChildExit(child))
	line("control verdict: %s", e.Control())
	line("audit verdict: %s", AuditVerdict(e.Exit(true, aud)))
	return b.String()
}

// Display is the row as people write it: h1a → H1a.
func (r RowID) Display() string { return strings.ToUpper(r.id[:1]) + r.id[1:] }

func countLines(b *strings.Builder, title string, counts map[string]uint64) {
	if len(counts) == 0 {
		fmt.Fprintf(b, "  %s (none)\n", title)
		return
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "  %s %s: %d\n", title, k, counts[k])
	}
}

// withheldLine is exactly one of the three shapes: the list, "none
// declared", or "not stated by the harness".
func (e *Evaluation) withheldLine() string {
	switch {
	case !e.WithheldStated:
		return "withheld: not stated by the harness"
	case len(e.Withheld) == 0:
		return "withheld: none declared"
	}
	items := make([]string, len(e.Withheld))
	for i, w := range e.Withheld {
		items[i] = fmt.Sprintf("%s (%s)", w.Tool, w.Reason)
	}
	return "withheld: " + bounded(items, "; ")
}

func (e *Evaluation) terminalLine() string {
	switch e.Terminal {
	case TerminalOK:
		return "terminal record: session.ended, the run finished"
	case TerminalError:
		if e.TerminalDetail == "" {
			return "terminal record: session.ended says the run failed"
		}
		return "terminal record: session.ended says the run failed (" + e.TerminalDetail + ")"
	}
	return "terminal record: none — the child ended without one"
}

func (e *Evaluation) pluginLines() []string {
	switch {
	case !e.PluginsStated:
		return []string{"plugins: not stated (the stream carries no attestation)"}
	case len(e.Plugins) == 0:
		return []string{"plugins: none"}
	}
	out := make([]string, len(e.Plugins))
	for i, p := range e.Plugins {
		out[i] = fmt.Sprintf("plugins: %s from %s at %s (sha256:%s) — %s", p.Name, p.Source, p.InstalledAt, p.Digest, p.LoadedBy)
	}
	return out
}

// ChildExit renders how the child ended: its exit code, "signal NAME", or
// "none" when nobody saw it end.
func ChildExit(p *record.Process) string {
	switch {
	case p == nil:
	case p.Kind == "exited" && p.Code != nil:
		return strconv.Itoa(*p.Code)
	case p.Kind == record.ProcessSignaled && p.Signal != nil:
		return "signal " + signalName(*p.Signal)
	}
	return "none"
}

func signalName(n int) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return name
	}
	return strconv.Itoa(n)
}

// AuditVerdict is an audited run's verdict as the report's last line
// states it, from its exit code: ok (0), gap (1), or no verdict (any other).
func AuditVerdict(code exit.Code) string {
	switch code {
	case exit.OK:
		return "ok (exit 0)"
	case exit.Gap:
		return "gap (exit 1)"
	}
	return fmt.Sprintf("no verdict (exit %d)", code)
}
