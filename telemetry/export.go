package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/metaharness/metaharness/record"
)

// Exporter is one process's export: a tracer provider whose spans go out
// in the background as they end, through an OTLP exporter that never
// retries, and the counts of what went out.
type Exporter struct {
	cfg    *Config
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	count  *counting
	ended  atomic.Int64

	mu       sync.Mutex
	flushErr string // why a flush failed: the end does not wait again

	// key is what a standalone sidecar's digests are keyed with
	// (AttrDigestKey): random, one per exporter.
	key string
}

// quiet routes the SDK's own complaints away from stderr, which carries
// refusals and the report: an export's failure is counted and said in a
// warning instead.
var quiet sync.Once

// NewExporter starts an export for service (metaharness's verb) of
// version. Nothing is dialled until the first spans go out.
func NewExporter(cfg *Config, service, version string) (*Exporter, error) {
	quiet.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
		otel.SetLogger(logr.Discard())
	})
	exp, err := newSpanExporter(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	x := &Exporter{cfg: cfg, count: &counting{SpanExporter: exp}, key: rand.Text()}
	res := resource.NewSchemaless(
		attribute.String("service.name", "metaharness"),
		attribute.String("service.version", version),
		attribute.String(AttrVerb, service),
	)
	x.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(endCounter{&x.ended}),
		sdktrace.WithBatcher(x.count, sdktrace.WithMaxQueueSize(8192), sdktrace.WithBatchTimeout(time.Second), sdktrace.WithExportTimeout(FlushBound)),
	)
	x.tracer = x.tp.Tracer("github.com/metaharness/metaharness/telemetry")
	return x, nil
}

// newSpanExporter is the OTLP exporter cfg asks for: no retries (a
// failure is counted, never retried silently), each export bounded.
func newSpanExporter(cfg *Config) (sdktrace.SpanExporter, error) {
	ctx := context.Background()
	if cfg.Protocol == ProtocolGRPC {
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint), otlptracegrpc.WithHeaders(cfg.Headers),
			otlptracegrpc.WithTimeout(FlushBound), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	u = u.JoinPath("v1", "traces")
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithHeaders(cfg.Headers),
		otlptracehttp.WithTimeout(FlushBound), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
}

// Tracer is the export's tracer.
func (x *Exporter) Tracer() trace.Tracer { return x.tracer }

// Config is what the export was asked for.
func (x *Exporter) Config() *Config { return x.cfg }

// State is what an export delivered, for a record (record.Telemetry).
type State = record.Telemetry

// state is the counts so far, and why some spans did not go out.
func (x *Exporter) state(waited error, bound time.Duration) State {
	s := State{Endpoint: x.cfg.Endpoint, Protocol: x.cfg.Protocol, Content: x.cfg.Content, Spans: x.ended.Load()}
	s.Exported, s.Error = x.count.result()
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case s.Error != "":
	case waited != nil:
		s.Error = reason(waited, bound)
	case x.flushErr != "":
		s.Error = x.flushErr
	case s.Exported < s.Spans:
		s.Error = fmt.Sprintf("%d of %d spans were not sent", s.Spans-s.Exported, s.Spans)
	}
	if s.Error != "" && x.flushErr == "" {
		x.flushErr = s.Error
	}
	return s
}

// Flush waits at most bound for every span ended so far to go out, and
// says what did. Once a flush has failed (or run out of time) the export
// waits no more: Shutdown then gives up at once.
func (x *Exporter) Flush(bound time.Duration) State {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return x.state(x.tp.ForceFlush(ctx), bound)
}

// Shutdown sends what is left, waiting at most bound (nothing after a
// flush that failed), and stops the export.
func (x *Exporter) Shutdown(bound time.Duration) State {
	x.mu.Lock()
	if x.flushErr != "" {
		bound = 0
	}
	x.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var err error
	if bound > 0 {
		err = x.tp.ForceFlush(ctx)
	}
	s := x.state(err, bound)
	_ = x.tp.Shutdown(ctx)
	return s
}

func reason(err error, bound time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("the collector did not take the spans within %v", bound)
	}
	return err.Error()
}

// counting is the OTLP exporter with the count of spans it delivered and
// the last error it met.
type counting struct {
	sdktrace.SpanExporter
	mu       sync.Mutex
	exported int64
	err      error
}

func (c *counting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	c.mu.Lock()
	if err != nil {
		c.err = err
	} else {
		c.exported += int64(len(spans))
	}
	c.mu.Unlock()
	return err
}

func (c *counting) result() (int64, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.exported, c.err.Error()
	}
	return c.exported, ""
}

// endCounter counts the spans that end.
type endCounter struct{ n *atomic.Int64 }

func (endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e endCounter) OnEnd(sdktrace.ReadOnlySpan)                   { e.n.Add(1) }
func (endCounter) Shutdown(context.Context) error                  { return nil }
func (endCounter) ForceFlush(context.Context) error                { return nil }
