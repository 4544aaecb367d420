package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
	"go.uber.org/zap"
)

// windUp is the last phase, once the child has ended: the calls still
// pending are abandoned (before the terminal record, so the census counts
// them), the proxy closes, the terminal record and stream.closed are
// written, and the run concludes.
func (r *run) windUp(ctx context.Context, plan *kind.Plan, svc *services, process *record.Process, terminal *record.SessionEnded) (exit.Code, error) {
	eng := svc.eng
	_ = eng.Close()
	r.closeProxy()
	r.closeTelemetry(context.Cause(ctx) != nil)
	if w := r.channelSummary(); w != nil {
		r.emit(nil, w)
	}
	for _, w := range r.gitSeal.changes() {
		r.emit(nil, w)
	}
	if w := svc.wire.unchecked(); w != nil {
		r.emit(nil, w)
	}
	if m := r.spec.Decisions; m == frame.ModeFrame || m == frame.ModeAsk {
		for _, w := range svc.wire.undecided() {
			r.emit(nil, w)
		}
	}
	if terminal != nil {
		census := eng.Census()
		census.NotOnWire = svc.wire.requestsDenied()
		if rc, ok := svc.sess.(kind.RecordChecker); ok {
			census.NotOnRecord = rc.RequestsNotOnRecord()
		}
		terminal.Census = &census
		_ = r.out.events.Emit(terminal)
	}
	reason := r.runner.CloseReason(terminal)
	switch {
	case eng.Halted():
		r.halted = "halt"
	case eng.Interrupted():
		r.halted = "interrupt"
	}
	switch {
	case eng.Halted():
		reason = record.ReasonSteerHalt
	case svc.killedUnasked(process):
		// A vendor killed by someone else never ends a run as completed,
		// whatever its last line said.
		reason = record.ReasonKilled
	}
	if err := r.out.events.Close(reason, process); err != nil {
		return exit.Refused, err
	}
	if rf, ok := svc.sess.(kind.Refuser); ok {
		if err := rf.Refusal(); err != nil {
			return exit.Refused, err
		}
	}
	return r.conclude(ctx, plan, process, terminal)
}

// closeProxy closes the proxy once the child is gone: a request is
// recorded (and put into the stream) when its handler ends, and Close waits
// for the handlers, so every request is in the stream before session.ended.
func (r *run) closeProxy() {
	if r.proxy == nil {
		return
	}
	if err := r.proxy.Close(); err != nil {
		r.io.Log.Warn("closing the loopback proxy", zap.Error(err))
	}
}

// conclude runs the auditor, prints the report when an audit is owed,
// writes --attestation and --retain-dir, and computes the exit code. The
// attestation is written whatever went wrong after the session: a stopped
// run, an auditor that could not give a verdict, a sink that failed, each
// then exit 2, the document saying so.
func (r *run) conclude(ctx context.Context, plan *kind.Plan, process *record.Process, terminal *record.SessionEnded) (exit.Code, error) {
	transcriptPath := r.tree.transcript()
	s := r.spec
	if s.RetainDir != "" {
		if err := copyFile(transcriptPath, filepath.Join(s.RetainDir, "transcript.jsonl")); err != nil {
			fmt.Fprintf(r.io.Stderr, "metaharness: retain-failed: copying the transcript into --retain-dir %s: %v\n", s.RetainDir, err)
		}
	}
	failed := len(r.out.events.Failures()) > 0
	if r.spec.Output == kind.OutputFinal && terminal != nil && terminal.FinalAnswer != nil {
		if _, err := fmt.Fprintln(r.io.Stdout, terminal.FinalAnswer.Text); err != nil {
			fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseStdoutClosed, "the final answer could not be written to stdout (%v); the run exits 2", err)))
			failed = true
		}
	}
	var upstream *upstreamStop
	errors.As(context.Cause(ctx), &upstream)
	var result *attest.AuditorResult
	var auditErr error
	if r.in.auditor != nil {
		switch stopped := context.Cause(ctx); {
		case upstream != nil:
			// The upstream served no session to audit; the exit code says why.
		case stopped != nil:
			// A stopped run has no time left for an auditor.
			auditErr = exit.Refuse(attest.RefuseAuditorInterrupted, "the run was stopped (%v) before the auditor ran, so there is no audit verdict", stopped)
		default:
			result, auditErr = r.in.auditor.Run(ctx, transcriptPath, r.io.Stderr)
		}
	}
	ev := r.out.tap.Evaluate(attest.Launch{
		Kind: s.Kind, Class: r.d.Capabilities.Adapter.Class, Hermetic: string(s.Hermetic), Audit: s.Audit,
		Credentials: s.Credentials, PlannedCwd: r.tree.cwd, PlannedMCPServers: plan.MCPServers, StandInCredential: plan.StandInCredential,
		Pins: r.d.Capabilities.VersionsPinned,
	})
	doc := ev.Document(s.Kind, s.AuditOwed(), result, process)
	if r.proxy != nil {
		doc.Loopback = &attest.Loopback{Counters: r.proxy.Counters(), Requests: r.proxy.Records()}
	}
	doc.StreamFailures = r.out.events.Failures()
	doc.Telemetry = r.tel.flushed
	quota := upstream != nil && upstream.Reason == loopback.StopQuota
	if quota {
		doc.UpstreamQuota = &upstream.Record
		doc.ExitCode = int(exit.Quota)
	} else if upstream != nil {
		doc.ExitCode = int(exit.Worst(exit.Code(doc.ExitCode), exit.Unknown))
	}
	if auditErr != nil || failed {
		doc.ExitCode = int(exit.Refused)
	}
	r.ended = &ended{doc: doc, terminal: terminal, upstream: upstream}
	var err error
	if r.ended.written, err = r.writeAttestations(doc); err != nil {
		return exit.Refused, err
	}
	if auditErr != nil {
		return exit.Refused, auditErr
	}
	code, err := ev.Conclude(r.io.Stderr, s.AuditOwed(), result, process)
	switch {
	case err != nil || failed:
	case quota:
		code = exit.Quota
	case upstream != nil:
		code = exit.Worst(code, exit.Unknown)
	}
	if quota {
		r.sayQuota(upstream)
	}
	if failed && err == nil {
		return exit.Refused, nil // named on stderr when the sink failed
	}
	if code == exit.Unknown && err == nil {
		r.ended.outcome, r.ended.line = r.unknownLine(ctx, ev, process, upstream)
		fmt.Fprintln(r.io.Stderr, r.ended.line)
	}
	return code, err
}

// upstreamStop is the cause of a run stopped at an upstream's answer
// (loopback.Stopper): a quota, exit 4; a rejected key, a refusing or an
// unreachable upstream, exit 3.
type upstreamStop struct {
	loopback.UpstreamStop
	credentials kind.Credentials
}

func (u *upstreamStop) Error() string { return u.What() }

// line is the one line a fleet's usage-limit rule is meant to match, for
// a quota stop.
func (u *upstreamStop) line() string {
	return fmt.Sprintf("metaharness: usage-limit: %v; the run was stopped at that answer (%s) instead of sitting through the vendor's retries (exit %d: retry after a cooldown, or on another account)", u, whichAnswer(u.Record), exit.Quota)
}

// whichAnswer says which of its request's answers a quota stop came at:
// the first, or the one after the throttles the proxy had waited out.
func whichAnswer(rec loopback.Record) string {
	n := len(rec.Throttled)
	if n == 0 {
		return "the request's first"
	}
	var waited time.Duration
	for _, th := range rec.Throttled {
		waited += th.Waited
	}
	return fmt.Sprintf("answer %d to the request, after %d throttle(s) waited out in %v", n+1, n, waited.Round(time.Millisecond))
}

// sayQuota prints u's line: on stdout under --output final or status,
// where it is then the only line, else on stderr, for stdout carries the
// event stream (whose LOOPBACK_UPSTREAM_QUOTA warning says the same).
func (r *run) sayQuota(u *upstreamStop) {
	line := u.line()
	if r.spec.Output == kind.OutputFinal || r.spec.Output == kind.OutputStatus {
		if _, err := fmt.Fprintln(r.io.Stdout, line); err == nil {
			return
		}
	}
	fmt.Fprintln(r.io.Stderr, line)
}

// unknownLine is the outcome of a run that exits 3 and its one line on
// stderr, saying what nobody found out and why: the upstream never served
// the session, a signal or the embedder stopped it, or the record cannot
// vouch for its end (no terminal record, a failed one, a gating row the
// audit could not judge).
func (r *run) unknownLine(ctx context.Context, ev *attest.Evaluation, process *record.Process, upstream *upstreamStop) (attest.Outcome, string) {
	say := func(o attest.Outcome, format string, args ...any) (attest.Outcome, string) {
		return o, "metaharness: " + o.LineName() + ": " + fmt.Sprintf(format, args...)
	}
	child := attest.ChildExit(process)
	if upstream != nil {
		o, why := attest.OutcomeUnreachable, "check --model-endpoint and the host's network; the same endpoint may answer later"
		switch upstream.Reason {
		case loopback.StopKeyRejected:
			o, why = attest.OutcomeKeyRejected, keyWords(upstream.credentials)
		case loopback.StopRefused:
			o, why = attest.OutcomeUpstreamRefused, "it does not serve this request there: check --model-endpoint (the API root, of the API this kind speaks) and the account's access to the model; a retry is answered the same"
		}
		return say(o, "%v; the run was stopped at that answer, before the vendor sat through its own retries, so nobody found out what the session would have done (exit 3: %s)", upstream, why)
	}
	switch cause := context.Cause(ctx); {
	case r.halted != "":
		return say(attest.OutcomeHalted, "the embedder's %s ended the session before its end (child exit %s), so nobody found out how it would have ended; the embedder chose that (exit 3)", r.halted, child)
	case cause != nil:
		return say(attest.OutcomeStopped, "the run was stopped (%v) before the session ended (child exit %s): its whole process group was ended, the records closed, so nobody found out how it would have ended (exit 3)", cause, child)
	}
	switch ev.Terminal {
	case attest.TerminalNone:
		return say(attest.OutcomeUnknown, "the vendor ended (child exit %s) with no terminal record, so nobody found out how the session ended; the event stream holds what it recorded (exit 3)", child)
	case attest.TerminalError:
		detail := ev.TerminalDetail
		if detail == "" {
			detail = "is_error true"
		}
		return say(attest.OutcomeUnknown, "the vendor's terminal record says the session failed (%s; child exit %s), so nobody can vouch for its work (exit 3)", detail, child)
	}
	for _, row := range ev.Rows {
		if row.Severity == attest.Gating && row.Verdict == attest.Unk {
			id := row.ID.String()
			return say(attest.OutcomeUnknown, "the audit could not judge gating row %s (%s: %s), so nobody found out whether it held (exit 3)", strings.ToUpper(id[:1])+id[1:], row.Label, row.Detail)
		}
	}
	return say(attest.OutcomeUnknown, "the auditor gave no verdict (exit 3), so nobody found out whether the session met its spec")
}

// keyWords say, by --credentials, whose key the upstream rejected.
func keyWords(c kind.Credentials) string {
	switch c {
	case kind.CredentialsAPIKey:
		return "the key the child sent is not accepted; fix it, a retry with it is refused again"
	case kind.CredentialsNone:
		return "the upstream wants a key and --credentials none sends none; give one (--credentials loopback), a retry without is refused again"
	}
	return "the token the proxy attached is not accepted, and re-reading it changed nothing; fix the key, a retry with it is refused again"
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return newfile.Write(to, b, 0o600)
}
