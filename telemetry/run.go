package telemetry

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// RunInfo is what a run is before its stream says more.
type RunInfo struct {
	// RunID is the run's id, the key its digests are taken with.
	RunID       string
	Kind        string
	Provider    string // gen_ai.provider.name: anthropic, openai; "" unknown
	Model       string // --model
	Hermetic    string
	Decisions   string
	Credentials string
	Prompt      string
}

// Run is one run's trace. It is a sink of the run's event stream (Write
// takes its lines) and turns them into spans; the proxy's requests join
// at the end (Requests), and End closes the root with the verdicts. Its
// methods are safe for concurrent use.
type Run struct {
	x       *Exporter
	content bool

	mu      sync.Mutex
	partial []byte
	root    trace.Span
	rootCtx context.Context
	turn    trace.Span
	turns   []window
	calls   map[string]trace.Span
	secrets []string // taken out of what the opt-in exports
	key     string   // the run's id, which its digests are keyed with
}

// window is a turn's span and when it was open, for the requests made in it.
type window struct {
	ctx        context.Context
	start, end time.Time
}

// StartRun opens a run's root span now.
func (x *Exporter) StartRun(info RunInfo) *Run {
	r := &Run{x: x, content: x.cfg.Content, calls: map[string]trace.Span{}, key: info.RunID}
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperation, OpInvokeAgent), attribute.String(AttrAgentName, info.Kind),
		attribute.String(AttrKind, info.Kind), attribute.String(AttrHermetic, info.Hermetic),
		attribute.String(AttrDecisions, info.Decisions), attribute.String(AttrCredentials, info.Credentials),
		attribute.String(AttrPromptDigest, digest(r.key, []byte(info.Prompt))), attribute.Int(AttrPromptBytes, len(info.Prompt)),
	}
	if info.Provider != "" {
		attrs = append(attrs, attribute.String(AttrProvider, info.Provider))
	}
	if info.Model != "" {
		attrs = append(attrs, attribute.String(AttrRequestModel, info.Model))
	}
	r.rootCtx, r.root = x.tracer.Start(context.Background(), OpInvokeAgent+" "+info.Kind,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if r.content {
		r.root.SetAttributes(attribute.String(AttrInputMessages, messages("user", info.Prompt)))
	}
	return r
}

// TraceID is the run's trace id, lowercase hex.
func (r *Run) TraceID() string { return r.root.SpanContext().TraceID().String() }

// Secrets are strings the opt-in's texts never carry (the placeholder).
func (r *Run) Secrets(s ...string) {
	r.mu.Lock()
	r.secrets = append(r.secrets, s...)
	r.mu.Unlock()
}

// Write takes lines of the event stream. It never fails: a line it cannot
// read is skipped, and the stream goes on.
func (r *Run) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		if l, err := record.ParseEvent(r.partial[:i]); err == nil {
			r.event(l)
		}
		r.partial = r.partial[i+1:]
	}
}

// parent is where a span opened now belongs: the open turn, else the root.
func (r *Run) parent() (context.Context, trace.Span) {
	if r.turn != nil {
		return r.turns[len(r.turns)-1].ctx, r.turn
	}
	return r.rootCtx, r.root
}

func (r *Run) event(l *record.EventLine) {
	now := time.Now()
	switch ev := l.Event.(type) {
	case *record.SessionStarted:
		r.root.SetAttributes(attribute.String(AttrRun, l.Run), attribute.String(AttrAgentID, l.Run))
		setString(r.root, AttrConversation, ev.SessionID)
		setString(r.root, AttrVendorModel, ev.Model)
		setString(r.root, AttrVendorVersion, ev.HarnessVersion)
	case *record.TurnStarted:
		r.endTurn(now, nil)
		ctx, s := r.x.tracer.Start(r.rootCtx, fmt.Sprintf("turn %d", ev.Turn), trace.WithTimestamp(now),
			trace.WithAttributes(attribute.Int(AttrTurn, int(ev.Turn))))
		r.turn = s
		r.turns = append(r.turns, window{ctx: ctx, start: now})
	case *record.TurnEnded:
		r.endTurn(now, ev.StopReason)
	case *record.ToolRequested:
		ctx, _ := r.parent()
		attrs := []attribute.KeyValue{
			attribute.String(AttrOperation, OpExecuteTool), attribute.String(AttrToolName, ev.Name), attribute.String(AttrToolCallID, ev.CallID),
			attribute.StringSlice(AttrOperations, nonNil(ev.Operations)), attribute.Int(AttrSubjects, len(ev.Subjects)),
			attribute.String(AttrSeam, ev.Seam), attribute.Bool(AttrDecisionNeeded, ev.DecisionRequired),
			attribute.String(AttrInputDigest, digest(r.key, ev.Input)), attribute.Int(AttrInputBytes, len(ev.Input)),
		}
		if r.content {
			attrs = append(attrs, attribute.String(AttrToolArguments, r.text(string(ev.Input))))
		}
		if old := r.calls[ev.CallID]; old != nil {
			old.End(trace.WithTimestamp(now))
		}
		_, s := r.x.tracer.Start(ctx, OpExecuteTool+" "+ev.Name, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
		r.calls[ev.CallID] = s
	case *record.ToolDecided:
		s := r.calls[ev.CallID]
		if s == nil {
			return
		}
		s.SetAttributes(attribute.String(AttrDecision, ev.Decision.Decision), attribute.String(AttrDecidedBy, ev.DecidedBy))
		if ev.LatencyMS != nil {
			s.SetAttributes(attribute.Int64(AttrDecisionMS, int64(*ev.LatencyMS)))
		}
		if ev.Decision.Decision == record.Deny {
			// Nothing runs; no result will come.
			s.End(trace.WithTimestamp(now))
			delete(r.calls, ev.CallID)
		}
	case *record.ToolResult:
		s := r.calls[ev.CallID]
		if s == nil {
			return
		}
		n := len(ev.Content)
		if ev.Bytes != nil {
			n = int(*ev.Bytes)
		}
		s.SetAttributes(attribute.Int(AttrResultBytes, n), attribute.String(AttrResultDigest, digest(r.key, ev.Content)))
		if ev.IsError != nil {
			s.SetAttributes(attribute.Bool(AttrIsError, *ev.IsError))
			if *ev.IsError {
				s.SetStatus(codes.Error, "the tool answered an error")
			}
		}
		if r.content {
			s.SetAttributes(attribute.String(AttrToolResult, r.text(string(ev.Content))))
		}
		s.End(trace.WithTimestamp(now))
		delete(r.calls, ev.CallID)
	case *record.Warning:
		_, s := r.parent()
		attrs := []attribute.KeyValue{attribute.String(AttrWarningCode, ev.Code), attribute.Int(AttrWarningBytes, len(ev.Message))}
		if r.content {
			attrs = append(attrs, attribute.String(AttrWarningMessage, r.text(ev.Message)))
		}
		s.AddEvent(EventWarning, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	case *record.Text:
		r.textEvent("text", ev.Text, now)
	case *record.Thinking:
		r.textEvent("thinking", ev.Text, now)
	case *record.UsageEvent:
		_, s := r.parent()
		s.AddEvent("usage", trace.WithTimestamp(now), trace.WithAttributes(usageAttrs(ev.Usage)...))
	case *record.CommandResult:
		r.root.AddEvent("metaharness.command.result", trace.WithTimestamp(now), trace.WithAttributes(
			attribute.String(AttrCommandID, ev.ID), attribute.String(AttrCommandOutcome, ev.Outcome.Result)))
	case *record.AuthExpired:
		r.root.AddEvent("metaharness.auth.expired", trace.WithTimestamp(now))
	case *record.SessionEnded:
		r.root.SetAttributes(usageAttrs(deref(ev.Usage))...)
		if ev.NumTurns != nil {
			r.root.SetAttributes(attribute.Int64(AttrNumTurns, int64(*ev.NumTurns)))
		}
		if ev.TotalCostUSD != nil {
			r.root.SetAttributes(attribute.Float64(AttrCostUSD, *ev.TotalCostUSD))
		}
		if ev.StopReason != nil {
			r.root.SetAttributes(attribute.StringSlice(AttrFinishReasons, []string{*ev.StopReason}))
		}
		setString(r.root, AttrTerminalReason, ev.TerminalReason)
		if r.content && ev.FinalAnswer != nil {
			r.root.SetAttributes(attribute.String(AttrOutputMessage, messages("assistant", r.text(ev.FinalAnswer.Text))))
		}
	case *record.StreamClosed:
		r.root.SetAttributes(attribute.String(AttrStreamReason, ev.Reason), attribute.Int64(AttrStreamEvents, int64(ev.Events)))
	}
}

// textEvent is a text of the model's, as an event of the open turn: its
// size, and with the opt-in the text.
func (r *Run) textEvent(name, text string, at time.Time) {
	_, s := r.parent()
	attrs := []attribute.KeyValue{attribute.Int(AttrTextBytes, len(text))}
	if r.content {
		attrs = append(attrs, attribute.String(AttrTextContent, r.text(text)))
	}
	s.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

func (r *Run) endTurn(at time.Time, stop *string) {
	if r.turn == nil {
		return
	}
	setString(r.turn, AttrStopReason, stop)
	r.turn.End(trace.WithTimestamp(at))
	r.turns[len(r.turns)-1].end = at
	r.turn = nil
}

// Requests adds the loopback proxy's requests, each a client span under
// the turn open when it began: a model request (a reverse request the
// wire view read) as a GenAI chat with the response's model, status,
// usage and bytes; the rest (a refusal, the egress gate's) by route.
func (r *Run) Requests(recs []loopback.Record, wire []loopback.Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		ctx := r.rootCtx
		for _, w := range r.turns {
			if !rec.Start.Before(w.start) && (w.end.IsZero() || rec.Start.Before(w.end)) {
				ctx = w.ctx
			}
		}
		requestSpan(r.x.tracer, ctx, rec, responseOf(rec, wire))
	}
}

// responseOf is the wire view's response to rec, nil when it read none.
func responseOf(rec loopback.Record, wire []loopback.Response) *loopback.Response {
	for i := range wire {
		if w := &wire[i]; w.Start.Equal(rec.Start) && w.Method == rec.Method {
			return w
		}
	}
	return nil
}

// requestSpan records one proxy request as a span of its own time.
func requestSpan(tr trace.Tracer, ctx context.Context, rec loopback.Record, resp *loopback.Response) {
	name := string(rec.Route) + " " + rec.Method + " " + rec.Path
	attrs := []attribute.KeyValue{
		attribute.String(AttrRoute, string(rec.Route)), attribute.Int64(AttrProxySeq, int64(rec.Seq)),
		attribute.String(AttrHTTPMethod, rec.Method), attribute.String(AttrURLPath, rec.Path),
		attribute.Int(AttrHTTPStatus, rec.Status), attribute.Int64(AttrBytesIn, rec.BytesIn), attribute.Int64(AttrBytesOut, rec.BytesOut),
	}
	if rec.Refused != "" {
		attrs = append(attrs, attribute.String(AttrRefused, rec.Refused))
	}
	if rec.Error != "" {
		attrs = append(attrs, attribute.String(AttrProxyError, rec.Error))
	}
	if resp != nil {
		name = OpChat + " " + resp.Model
		attrs = append(attrs, attribute.String(AttrOperation, OpChat), attribute.String(AttrResponseModel, resp.Model),
			attribute.String(AttrResponseID, resp.ID), attribute.Bool(AttrStream, resp.Stream))
		if resp.StopReason != "" {
			attrs = append(attrs, attribute.StringSlice(AttrFinishReasons, []string{resp.StopReason}))
		}
		if resp.ErrorType != "" {
			attrs = append(attrs, attribute.String(AttrErrorType, resp.ErrorType))
		}
		if u := resp.Usage; u != nil {
			attrs = append(attrs, attribute.Int64(AttrInputTokens, u.InputTokens), attribute.Int64(AttrOutputTokens, u.OutputTokens),
				attribute.Int64(AttrCacheRead, u.CacheReadTokens), attribute.Int64(AttrCacheCreation, u.CacheCreationTokens))
		}
	}
	_, s := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(rec.Start), trace.WithAttributes(attrs...))
	if rec.Refused != "" || rec.Error != "" || rec.Status >= 400 || (resp != nil && resp.ErrorType != "") {
		s.SetStatus(codes.Error, cmpOr(rec.Refused, rec.Error, resp))
	}
	s.End(trace.WithTimestamp(rec.Start.Add(rec.Duration)))
}

func cmpOr(refused, err string, resp *loopback.Response) string {
	switch {
	case refused != "":
		return "refused: " + refused
	case err != "":
		return err
	case resp != nil && resp.ErrorType != "":
		return resp.ErrorType
	}
	return "an error status"
}

// Verdicts are how the run ended, for the root span.
type Verdicts struct {
	ExitCode       int
	Outcome        string
	Reason         string // the refusal, usage-limit or exit-3 line; "" none
	ChildExit      string
	ControlVerdict string
	Audited        bool
	Gaps, Unknown  []string // the rows not ok
	Census         *record.Census
}

// Close ends what is still open (a call with no result, a turn with no
// end: marked unfinished) and waits at most bound for the spans so far to
// go out: the run's first flush, before its stream closes, so that a
// failure can still be said there.
func (r *Run) Close(bound time.Duration) State {
	r.mu.Lock()
	now := time.Now()
	for id, s := range r.calls {
		s.SetAttributes(attribute.Bool(AttrUnfinished, true))
		s.End(trace.WithTimestamp(now))
		delete(r.calls, id)
	}
	if r.turn != nil {
		r.turn.SetAttributes(attribute.Bool(AttrUnfinished, true))
		r.endTurn(now, nil)
	}
	r.mu.Unlock()
	st := r.x.Flush(bound)
	st.TraceID = r.TraceID()
	return st
}

// End closes the root span with v and shuts the export down, waiting at
// most bound (nothing, after a Close that failed).
func (r *Run) End(v Verdicts, bound time.Duration) State {
	r.mu.Lock()
	attrs := []attribute.KeyValue{attribute.Int(AttrExitCode, v.ExitCode), attribute.String(AttrOutcome, v.Outcome),
		attribute.String(AttrChildExit, v.ChildExit), attribute.String(AttrControlVerdict, v.ControlVerdict), attribute.Bool(AttrAudited, v.Audited),
		attribute.StringSlice(AttrRowsGap, nonNil(v.Gaps)), attribute.StringSlice(AttrRowsUnknown, nonNil(v.Unknown))}
	if v.Reason != "" {
		attrs = append(attrs, attribute.String(AttrReason, v.Reason))
	}
	if c := v.Census; c != nil {
		attrs = append(attrs, attribute.Int64(AttrCensusAllowed, int64(c.Allowed)), attribute.Int64(AttrCensusDenied, int64(c.Denied)),
			attribute.Int64(AttrCensusReplaced, int64(c.Replaced)), attribute.Int64(AttrCensusAbstain, int64(c.Abstained)))
	}
	r.root.SetAttributes(attrs...)
	if v.ExitCode != 0 {
		r.root.SetStatus(codes.Error, fmt.Sprintf("exit %d (%s)", v.ExitCode, v.Outcome))
	}
	r.root.End()
	r.mu.Unlock()
	st := r.x.Shutdown(bound)
	st.TraceID = r.TraceID()
	return st
}

// maxText bounds one text the opt-in exports.
const maxText = 8 << 10

// text is s as the opt-in exports it: the secrets taken out, cut to
// maxText bytes on a character boundary.
func (r *Run) text(s string) string {
	for _, sec := range r.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	if len(s) > maxText {
		cut := maxText
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// messages is one message in the GenAI conventions' JSON form.
func messages(role, text string) string {
	b, _ := json.Marshal([]map[string]any{{"role": role, "parts": []map[string]string{{"type": "text", "content": text}}}})
	return string(b)
}

func usageAttrs(u record.Usage) []attribute.KeyValue {
	var out []attribute.KeyValue
	if u.InputTokens != nil {
		out = append(out, attribute.Int64(AttrInputTokens, int64(*u.InputTokens)))
	}
	if u.OutputTokens != nil {
		out = append(out, attribute.Int64(AttrOutputTokens, int64(*u.OutputTokens)))
	}
	return out
}

func deref(u *record.Usage) record.Usage {
	if u == nil {
		return record.Usage{}
	}
	return *u
}

func setString(s trace.Span, key string, v *string) {
	if v != nil && *v != "" {
		s.SetAttributes(attribute.String(key, *v))
	}
}

// digest is HMAC-SHA256 of b keyed with key (a run's id): the same text
// digests differently in every run, so a trace store cannot be searched
// with a table of likely prompts and inputs, nor one run's calls matched
// to another's; whoever holds the text and the run's id can still check
// it.
func digest(key string, b []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
