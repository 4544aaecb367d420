package launcher

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/contextfile"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
	"go.uber.org/zap"
)

// stream is the run's event stream and what it is written to.
type stream struct {
	events *record.Writer
	runID  string      // the stream's, once it is open
	tap    *attest.Tap // the copy the floor reads at the end
	files  []io.Closer // --events and the fleet's artifact, closed by cleanup
	// recordsMade: the run's own directory under --records-dir exists
	// (sessionoutputs.go).
	recordsMade bool
}

// endStream closes a stream that a refusal or a stop cut short. Once a
// line was written, or the run was stopped, every path ends with
// stream.closed, so the record stays complete; a refusal before any line
// leaves no stream and no --events file at all; a warning still owed by
// a probe run beside the launch counts as a line.
func (r *run) endStream(wasStopped bool) {
	if r.out.events == nil || r.out.events.Closed() {
		return
	}
	r.out.events.Settle()
	if r.out.events.Lines() > 0 || wasStopped {
		_ = r.out.events.Close(record.ReasonError, nil)
		return
	}
	for _, f := range r.eventFiles() {
		_ = os.Remove(f.path)
	}
}

// openEvents creates the event stream: stdout under --output events, plus
// --events FILE and the fleet's artifacts directory or the run's records
// directory, plus the tap the floor reads.
func (r *run) openEvents() error {
	r.out.tap = &attest.Tap{}
	sinks := []record.Sink{{Name: "the attestation's copy", W: r.out.tap}}
	if r.spec.Output == kind.OutputEvents || r.spec.Output == "" {
		sinks = append(sinks, record.Sink{Name: sinkStdout, W: r.io.Stdout})
	}
	sinks = append(sinks, r.statementSink()...)
	sinks = append(sinks, r.telemetrySink()...)
	for _, ef := range r.eventFiles() {
		f, err := os.OpenFile(ef.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return exit.Wrap(RefuseEventsFile, err, "%s %s cannot be created (it must not exist yet, so that no earlier record is overwritten)", ef.from, ef.path)
		}
		r.out.files = append(r.out.files, f)
		sinks = append(sinks, record.Sink{Name: ef.from + " " + ef.path, W: f})
	}
	r.out.events = record.NewStream(r.out.runID, r.sinkFailed, sinks...)
	return nil
}

// newRunID is a run's id: its kind and 48 random bits, unique enough to
// name the run's directory under --records-dir (made exclusively).
func newRunID(kind string) string {
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	return kind + "-" + hex.EncodeToString(id)
}

// sinkStdout names stdout among the stream's sinks.
const sinkStdout = "stdout"

// sinkFailed is told, once, of each sink that stops taking the stream; the
// others go on with it. A stdout whose reader went away stops the run. The
// run ends with exit 2 either way, the attestation naming the sink
// (stream_failures).
func (r *run) sinkFailed(f record.SinkFailure) {
	if f.Sink == sinkStdout {
		fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseStdoutClosed,
			"stdout stopped taking the event stream at line %d (%s); metaharness stops the child, finishes --events and --attestation, removes the scratch tree and exits 2", f.Line, f.Error)))
		r.stop(errStdoutClosed)
		return
	}
	fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseEventsFile,
		"%s stopped taking the event stream at line %d (%s); the stream goes on without it, and the run will exit 2", f.Sink, f.Line, f.Error)))
}

func (r *run) emit(at *string, ev record.Event) {
	var err error
	if at != nil {
		err = r.out.events.EmitAt(*at, ev)
	} else {
		err = r.out.events.Emit(ev)
	}
	if err != nil {
		r.io.Log.Warn("writing an event", zap.String("event", ev.EventName()), zap.Error(err))
	}
}

// complete adds metaharness's own facts to the vendor's opening record.
func (r *run) complete(ev *record.SessionStarted, plan *kind.Plan) {
	if ev.HarnessVersion == nil && r.d.VersionFromProbe {
		if v := r.vendorVersion(); v != "" {
			ev.HarnessVersion = &v
		}
	}
	att := plan.Attestation
	ev.Hermetic = &att
	ev.Transcript = &record.TranscriptRef{Path: r.tree.transcript()}
	ev.ContextFiles = contextfile.Records(r.in.context, r.d.ContextChannel)
	ev.TraceID = r.traceID()
	if c := r.in.contract; c != nil {
		ev.Withheld = []record.Withheld{}
		for _, e := range c.Unperformed() {
			ev.Withheld = append(ev.Withheld, record.Withheld{Tool: r.d.CatalogueName(e.Published()), Reason: "this build performs no entry named " + e.Name})
		}
		ev.AvailableOperations = c.Operations()
	}
	if r.d.Rules.DefaultVerbs(r.spec) {
		ev.Withheld = []record.Withheld{}
		ev.AvailableOperations = kind.DefaultSurface(r.spec).Operations()
	}
}
