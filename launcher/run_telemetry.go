package launcher

import (
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/telemetry"
)

// WarnOTLPExport: the run's OpenTelemetry export did not deliver every
// span by the time the stream closed (a collector down, slow or refusing);
// the run is not affected.
const WarnOTLPExport = "OTLP_EXPORT_FAILED"

// trace is the run's OpenTelemetry trace and what became of it.
type trace struct {
	run     *telemetry.Run    // nil without --otlp-endpoint
	flushed *record.Telemetry // what its first flush delivered (closeTelemetry)
}

// startTelemetry starts the run's trace when --otlp-endpoint or
// OTEL_EXPORTER_OTLP_ENDPOINT asks for one: its root span opens now.
func (r *run) startTelemetry() error {
	cfg, err := telemetry.Resolve(r.spec.OTLPEndpoint, r.io.Env)
	if err != nil || cfg == nil {
		return err
	}
	x, err := telemetry.NewExporter(cfg, "run", r.io.Version)
	if err != nil {
		return exit.Wrap(telemetry.RefuseOTLPEndpoint, err, "the OpenTelemetry export cannot start")
	}
	s := r.spec
	r.tel.run = x.StartRun(telemetry.RunInfo{RunID: r.out.runID, Kind: s.Kind, Provider: providerOf(r.d.ModelAPI), Model: s.Model,
		Hermetic: string(s.Hermetic), Decisions: string(s.Decisions), Credentials: string(s.Credentials), Prompt: s.Prompt})
	return nil
}

// providerOf is gen_ai.provider.name for a kind's model API.
func providerOf(api string) string {
	switch api {
	case loopback.AnthropicMessages:
		return "anthropic"
	case loopback.OpenAIResponses:
		return "openai"
	}
	return ""
}

// telemetrySink is the trace, as a sink of the event stream.
func (r *run) telemetrySink() []record.Sink {
	if r.tel.run == nil {
		return nil
	}
	return []record.Sink{{Name: "the OpenTelemetry export", W: r.tel.run}}
}

// traceID is the run's trace id, "" without an export.
func (r *run) traceID() string {
	if r.tel.run == nil {
		return ""
	}
	return r.tel.run.TraceID()
}

// closeTelemetry is the trace's first flush, at the wind-up once the proxy
// has closed and before the terminal record: the proxy's requests join
// the trace, what is open ends, and at most a bounded wait sends it, so
// that a collector that is down or silent is said in the stream (and the
// attestation) while it is open.
func (r *run) closeTelemetry(stopped bool) {
	if r.tel.run == nil {
		return
	}
	if r.proxy != nil {
		var wire []loopback.Response
		if w := r.proxy.Wire(); w != nil {
			wire = w.Responses()
		}
		r.tel.run.Requests(r.proxy.Records(), wire)
	}
	bound := telemetry.FlushBound
	if stopped {
		bound = telemetry.StoppedFlushBound
	}
	st := r.tel.run.Close(bound)
	r.tel.flushed = &st
	if st.Error != "" {
		r.emit(nil, &record.Warning{Code: WarnOTLPExport, Message: fmt.Sprintf(
			"the OpenTelemetry export to %s delivered %d of %d spans (%s); the run is not affected, and trace %s lacks the rest",
			st.Endpoint, st.Exported, st.Spans, st.Error, st.TraceID)})
	}
}

// endTelemetry closes the root span with how the run ended and stops the
// export, within the bound (at once after a first flush that failed).
func (r *run) endTelemetry(code exit.Code, err error, stopped bool) {
	if r.tel.run == nil {
		return
	}
	v := telemetry.Verdicts{ExitCode: int(code), Outcome: r.outcome(code).Name, Reason: r.reason(err)}
	if e := r.ended; e != nil {
		v.ChildExit, v.ControlVerdict, v.Audited = e.doc.ChildExit, e.doc.ControlVerdict, e.doc.Audited
		census := e.doc.Census
		v.Census = &census
		for _, row := range e.doc.Rows {
			switch row.Verdict {
			case attest.Gap:
				v.Gaps = append(v.Gaps, row.ID.String())
			case attest.Unk:
				v.Unknown = append(v.Unknown, row.ID.String())
			}
		}
	}
	bound := telemetry.FlushBound
	if stopped {
		bound = telemetry.StoppedFlushBound
	}
	if st := r.tel.run.End(v, bound); st.Error != "" && (r.tel.flushed == nil || r.tel.flushed.Error == "") {
		// The stream and the attestation are written; stderr is left.
		fmt.Fprintf(r.io.Stderr, "metaharness: warning: the OpenTelemetry export of trace %s to %s ended incomplete (%s)\n", st.TraceID, st.Endpoint, strings.TrimSpace(st.Error))
	}
}
