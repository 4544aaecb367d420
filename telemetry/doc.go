// Package telemetry exports a run, or a sidecar's calls and requests, as
// an OpenTelemetry trace over OTLP (HTTP/protobuf or gRPC), with the
// OpenTelemetry Go SDK and its exporters.
//
// A run is one trace: a root span (the kind, the model, the verdicts, the
// exit code), a span for each turn, each tool call (its name, call id,
// operations, decision, who decided, latency) and each request through the
// loopback proxy (model, status, token usage, bytes), and the warnings as
// span events. Attributes are named after the OpenTelemetry GenAI
// semantic conventions where they have a name (gen_ai.*), ours under
// metaharness.*. Spans are built from the event stream itself (Run is one
// of its sinks) and from the proxy's records and wire view, so the trace
// says what the record says and nothing else.
//
// What is exported by default holds no token, no placeholder, no file
// content and no prompt: prompts, texts, tool inputs and results appear as
// digests and sizes, each digest HMAC-SHA256 keyed with the run's id (a
// sidecar's with a random key each span names), so that no table of
// likely prompts finds them and one run's calls cannot be matched to
// another's. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true,
// the GenAI conventions' own opt-in, adds them (bounded, the placeholder
// taken out).
//
// The export never stalls or fails what it observes: spans go out in the
// background as they end, a queue that fills drops, no request is retried,
// and the end costs at most one bounded flush (FlushBound), after which
// whatever did not go out is counted and said in a warning.
package telemetry
