package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
	"go.uber.org/zap"
)

// windUp is the last phase, once the child has ended: the calls still
// pending are abandoned (before the terminal record, so the census counts
// them), the proxy closes, the terminal record and stream.closed are
// written, and the run concludes.
func (r *run) windUp(ctx context.Context, plan *Plan, svc *services, process *record.Process, terminal *record.SessionEnded) (exit.Code, error) {
	eng := svc.eng
	_ = eng.Close()
	r.closeProxy()
	r.closeTelemetry(context.Cause(ctx) != nil)
	if w := r.channelSummary(); w != nil {
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
		terminal.Census = &census
		_ = r.out.events.Emit(terminal)
	}
	reason := r.runner.CloseReason(terminal)
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
	if rf, ok := svc.sess.(Refuser); ok {
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
func (r *run) conclude(ctx context.Context, plan *Plan, process *record.Process, terminal *record.SessionEnded) (exit.Code, error) {
	transcriptPath := r.tree.transcript()
	s := r.spec
	if s.RetainDir != "" {
		if err := copyFile(transcriptPath, filepath.Join(s.RetainDir, "transcript.jsonl")); err != nil {
			fmt.Fprintf(r.io.Stderr, "metaharness: retain-failed: copying the transcript into --retain-dir %s: %v\n", s.RetainDir, err)
		}
	}
	failed := len(r.out.events.Failures()) > 0
	if r.spec.Output == OutputFinal && terminal != nil && terminal.FinalAnswer != nil {
		if _, err := fmt.Fprintln(r.io.Stdout, terminal.FinalAnswer.Text); err != nil {
			fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseStdoutClosed, "the final answer could not be written to stdout (%v); the run exits 2", err)))
			failed = true
		}
	}
	var quota *quotaStop
	errors.As(context.Cause(ctx), &quota)
	var result *attest.AuditorResult
	var auditErr error
	if r.in.auditor != nil {
		switch stopped := context.Cause(ctx); {
		case quota != nil:
			// The upstream served no session to audit; exit 4 says why.
		case stopped != nil:
			// A stopped run has no time left for an auditor.
			auditErr = exit.Refuse(attest.RefuseAuditorInterrupted, "the run was stopped (%v) before the auditor ran, so there is no audit verdict", stopped)
		default:
			result, auditErr = r.in.auditor.Run(ctx, transcriptPath, r.io.Stderr)
		}
	}
	ev := attest.Evaluate(r.out.tap.Lines(), attest.Launch{
		Kind: s.Kind, Class: r.caps.Adapter.Class, Hermetic: string(s.Hermetic), Audit: s.Audit,
		Credentials: s.Credentials, PlannedCwd: r.tree.cwd, PlannedMCPServers: plan.MCPServers, StandInCredential: plan.StandInCredential,
		Pins: r.caps.VersionsPinned,
	})
	doc := ev.Document(s.Kind, s.AuditOwed(), result, process)
	if r.proxy != nil {
		doc.Loopback = &attest.Loopback{Counters: r.proxy.Counters(), Requests: r.proxy.Records()}
	}
	doc.StreamFailures = r.out.events.Failures()
	doc.Telemetry = r.telState
	if quota != nil {
		doc.UpstreamQuota = &quota.rec
		doc.ExitCode = int(exit.Quota)
	}
	if auditErr != nil || failed {
		doc.ExitCode = int(exit.Refused)
	}
	r.ended = &ended{doc: doc, terminal: terminal, quota: quota}
	var err error
	if r.ended.written, err = s.writeAttestations(doc); err != nil {
		return exit.Refused, err
	}
	if auditErr != nil {
		return exit.Refused, auditErr
	}
	code, err := ev.Conclude(r.io.Stderr, s.AuditOwed(), result, process)
	if quota != nil {
		r.sayQuota(quota)
		if err == nil && !failed {
			code = exit.Quota
		}
	}
	if failed && err == nil {
		return exit.Refused, nil // named on stderr when the sink failed
	}
	return code, err
}

// quotaStop is the cause of a run stopped by the upstream's first quota
// answer (loopback.Quota).
type quotaStop struct{ rec loopback.Record }

func (q *quotaStop) Error() string {
	return fmt.Sprintf("the model API answered %s %s with %s", q.rec.Method, q.rec.Path, loopback.QuotaPhrase(*q.rec.Quota))
}

// line is the one line a fleet's usage-limit rule is meant to match.
func (q *quotaStop) line() string {
	return fmt.Sprintf("metaharness: usage-limit: %v; the run was stopped at that first answer instead of sitting through the vendor's retries (exit %d: retry after a cooldown, or on another account)", q, exit.Quota)
}

// sayQuota prints q's line: on stdout under --output final, where it is
// then the only line, else on stderr, for stdout carries the event stream
// (whose LOOPBACK_UPSTREAM_QUOTA warning says the same).
func (r *run) sayQuota(q *quotaStop) {
	line := q.line()
	if r.spec.Output == OutputFinal {
		if _, err := fmt.Fprintln(r.io.Stdout, line); err == nil {
			return
		}
	}
	fmt.Fprintln(r.io.Stderr, line)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return newfile.Write(to, b, 0o600)
}
