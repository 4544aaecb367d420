package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// The standalone sidecars (loopback, mcp-serve) serve for as long as their
// embedder runs them: each request and each call is a trace of its own,
// sent as it ends.

// Request records one request through a standalone proxy, with the wire
// view's response to it when there is one.
func (x *Exporter) Request(rec loopback.Record, resp *loopback.Response) {
	requestSpan(x.tracer, context.Background(), rec, resp)
}

// Asker records each call a standalone mcp-serve decides, as it is asked
// of inner: the tool, the call id, the entry's operation, the decision and
// its latency. The arguments are a digest and a size unless the opt-in
// says otherwise.
func (x *Exporter) Asker(inner decide.Asker) decide.Asker {
	return decide.AskerFunc(func(ctx context.Context, req decide.Request) (record.Decision, error) {
		start := time.Now()
		attrs := []attribute.KeyValue{
			attribute.String(AttrOperation, OpExecuteTool), attribute.String(AttrToolName, req.Tool), attribute.String(AttrToolCallID, req.CallID),
			attribute.String(AttrMCPTool, req.Entry), attribute.StringSlice(AttrOperations, nonNil(operations(req.Operation))),
			attribute.Int(AttrSubjects, len(req.Subjects)), attribute.String(AttrSeam, req.Seam),
			attribute.String(AttrInputDigest, digest(x.key, req.Input)), attribute.String(AttrDigestKey, x.key), attribute.Int(AttrInputBytes, len(req.Input)),
		}
		if x.cfg.Content {
			attrs = append(attrs, attribute.String(AttrToolArguments, truncate(string(req.Input))))
		}
		_, s := x.tracer.Start(ctx, OpExecuteTool+" "+req.Tool, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		d, err := inner.Ask(ctx, req)
		if err != nil {
			s.SetStatus(codes.Error, "the decision channel failed")
		} else {
			s.SetAttributes(attribute.String(AttrDecision, d.Decision))
		}
		s.SetAttributes(attribute.Int64(AttrDecisionMS, time.Since(start).Milliseconds()))
		s.End()
		return d, err
	})
}

// Done stops a sidecar's export, waiting at most FlushBound for what is
// left, and says what was delivered.
func (x *Exporter) Done() State { return x.Shutdown(FlushBound) }

func operations(op string) []string {
	if op == "" {
		return nil
	}
	return []string{op}
}

func truncate(s string) string {
	r := Run{}
	return r.text(s)
}
