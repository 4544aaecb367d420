package record

// Telemetry is what a run's OpenTelemetry export delivered, as the
// attestation carries it: where it went, the trace, how many spans ended
// and how many the collector took, and why the rest did not go. Never a
// header (a collector's credentials).
type Telemetry struct {
	Endpoint string `json:"endpoint"`
	Protocol string `json:"protocol" jsonschema:"enum=http/protobuf,enum=grpc"`
	// TraceID is the run's trace; empty for a sidecar's.
	TraceID string `json:"trace_id,omitempty"`
	// Spans counts the spans that had ended when this was said, Exported
	// those the collector took.
	Spans    int64 `json:"spans"`
	Exported int64 `json:"exported"`
	// Content: prompts and texts were exported (the GenAI opt-in).
	Content bool `json:"content"`
	// Error is why some spans did not go out; empty when all did.
	Error string `json:"error,omitempty"`
}
