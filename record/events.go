package record

import "encoding/json"

// Event is the payload of one metaharness.event/1 line.
type Event interface {
	// EventName is the wire name, for example "tool.requested".
	EventName() string
}

// EventNames lists the twenty event names in the design's order.
var EventNames = []string{
	"session.started", "session.ended", "step.entered", "step.left",
	"turn.started", "turn.ended", "text", "thinking", "thinking.estimate",
	"injection", "tool.requested", "tool.decided", "tool.result", "usage",
	"rate_limit", "command.result", "warning", "opaque", "auth.expired",
	"stream.closed",
}

// newEvent returns a zero payload for a wire name, or nil for an unknown one.
func newEvent(name string) Event {
	switch name {
	case "session.started":
		return &SessionStarted{}
	case "session.ended":
		return &SessionEnded{}
	case "step.entered":
		return &StepEntered{}
	case "step.left":
		return &StepLeft{}
	case "turn.started":
		return &TurnStarted{}
	case "turn.ended":
		return &TurnEnded{}
	case "text":
		return &Text{}
	case "thinking":
		return &Thinking{}
	case "thinking.estimate":
		return &ThinkingEstimate{}
	case "injection":
		return &Injection{}
	case "tool.requested":
		return &ToolRequested{}
	case "tool.decided":
		return &ToolDecided{}
	case "tool.result":
		return &ToolResult{}
	case "usage":
		return &UsageEvent{}
	case "rate_limit":
		return &RateLimit{}
	case "command.result":
		return &CommandResult{}
	case "warning":
		return &Warning{}
	case "opaque":
		return &Opaque{}
	case "auth.expired":
		return &AuthExpired{}
	case "stream.closed":
		return &StreamClosed{}
	}
	return nil
}

// SessionStarted is the opening record: the only place where what the model
// was offered can be compared with what the launch planned.
type SessionStarted struct {
	Adapter             string         `json:"adapter"`
	AdapterClass        string         `json:"adapter_class"`
	HarnessVersion      *string        `json:"harness_version" jsonschema:"nullable"`
	SessionID           *string        `json:"session_id" jsonschema:"nullable"`
	Model               *string        `json:"model" jsonschema:"nullable"`
	PermissionMode      *string        `json:"permission_mode" jsonschema:"nullable"`
	CredentialSource    *string        `json:"credential_source" jsonschema:"nullable"`
	OutputStyle         *string        `json:"output_style" jsonschema:"nullable"`
	Cwd                 *string        `json:"cwd" jsonschema:"nullable"`
	OfferedTools        []string       `json:"offered_tools" jsonschema:"nullable"`
	AvailableOperations []string       `json:"available_operations,omitempty"`
	Withheld            []Withheld     `json:"withheld" jsonschema:"nullable"`
	SlashCommands       []string       `json:"slash_commands" jsonschema:"nullable"`
	Skills              []string       `json:"skills" jsonschema:"nullable"`
	Agents              []string       `json:"agents" jsonschema:"nullable"`
	Plugins             []Plugin       `json:"plugins" jsonschema:"nullable"`
	MCPServers          []MCPServer    `json:"mcp_servers" jsonschema:"nullable"`
	InputsDigest        *string        `json:"inputs_digest" jsonschema:"nullable"`
	Transcript          *TranscriptRef `json:"transcript" jsonschema:"nullable"`
	Hermetic            *Attestation   `json:"hermetic" jsonschema:"nullable"`
	ContextFiles        []ContextFile  `json:"context_files,omitempty"`
	// TraceID is the run's OpenTelemetry trace id (--otlp-endpoint),
	// absent without an export: a fleet joins records and traces by it.
	TraceID string `json:"trace_id,omitempty"`
}

// Withheld is one tool the run asked for and the machine refused to admit.
// A nil list means the harness did not say; an empty list means it said
// nothing was withheld.
type Withheld struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Plugin is one plugin the vendor reports loaded.
type Plugin struct {
	Name    string  `json:"name"`
	Source  *string `json:"source" jsonschema:"nullable"`
	Version *string `json:"version" jsonschema:"nullable"`
}

// MCPServer is one MCP server the vendor reports, with its status.
type MCPServer struct {
	Name   string  `json:"name"`
	Status *string `json:"status" jsonschema:"nullable"`
}

// TranscriptRef names the retained raw vendor transcript. Digest and bytes
// are usually null at start, while the file is still growing.
type TranscriptRef struct {
	Path   string  `json:"path"`
	Digest *string `json:"digest" jsonschema:"nullable"`
	Bytes  *uint64 `json:"bytes" jsonschema:"nullable"`
}

// ContextFile is one declared --context file as it reached the model.
type ContextFile struct {
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Bytes   uint64 `json:"bytes"`
	Channel string `json:"channel"`
}

// Attestation is metaharness's own claim about which hermeticity controls it
// imposed (session.started.hermetic). It is not evidence; the floor compares
// it with the record.
type Attestation struct {
	Mode             string            `json:"mode"`
	Decisions        string            `json:"decisions"`
	Imposed          []RowHow          `json:"imposed"`
	Unavailable      []RowWhy          `json:"unavailable"`
	Declared         []RowWhat         `json:"declared"`
	AmbientInputs    []string          `json:"ambient_inputs"`
	InstalledPlugins []InstalledPlugin `json:"installed_plugins"`
}

// RowHow names an imposed row and the concrete mechanism.
type RowHow struct {
	Row string `json:"row"`
	How string `json:"how"`
}

// RowWhy names a row that could not be imposed and why.
type RowWhy struct {
	Row string `json:"row"`
	Why string `json:"why"`
}

// RowWhat names a row the caller declared (H7 under --scratch-cwd) and what
// the declaration says.
type RowWhat struct {
	Row  string `json:"row"`
	What string `json:"what"`
}

// InstalledPlugin is one plugin the launch handed the vendor.
type InstalledPlugin struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	InstalledAt string `json:"installed_at"`
	Digest      string `json:"digest"`
	LoadedBy    string `json:"loaded_by"`
}

// SessionEnded is the terminal record.
type SessionEnded struct {
	FinalAnswer       *FinalAnswer     `json:"final_answer" jsonschema:"nullable"`
	ObservedModels    []ObservedModel  `json:"observed_models" jsonschema:"nullable"`
	IsError           *bool            `json:"is_error" jsonschema:"nullable"`
	Subtype           *string          `json:"subtype" jsonschema:"nullable"`
	StopReason        *string          `json:"stop_reason" jsonschema:"nullable"`
	TerminalReason    *string          `json:"terminal_reason" jsonschema:"nullable"`
	APIErrorStatus    *int             `json:"api_error_status" jsonschema:"nullable"`
	NumTurns          *uint64          `json:"num_turns" jsonschema:"nullable"`
	DurationMS        *uint64          `json:"duration_ms" jsonschema:"nullable"`
	DurationAPIMS     *uint64          `json:"duration_api_ms" jsonschema:"nullable"`
	TTFTMS            *uint64          `json:"ttft_ms" jsonschema:"nullable"`
	TimeToRequestMS   *uint64          `json:"time_to_request_ms" jsonschema:"nullable"`
	TotalCostUSD      *float64         `json:"total_cost_usd" jsonschema:"nullable"`
	PermissionDenials json.RawMessage  `json:"permission_denials"`
	SubagentsSpawned  *uint64          `json:"subagents_spawned" jsonschema:"nullable"`
	Usage             *Usage           `json:"usage" jsonschema:"nullable"`
	ModelUsage        map[string]Usage `json:"model_usage" jsonschema:"nullable"`
	Census            *Census          `json:"census" jsonschema:"nullable"`
}

// FinalAnswer is the last agent message of a successful terminal record.
type FinalAnswer struct {
	Text   string  `json:"text"`
	TurnID *string `json:"turn_id" jsonschema:"nullable"`
}

// ObservedModel is a recorded model selection, not proof of the serving model.
type ObservedModel struct {
	Turn   uint64  `json:"turn"`
	TurnID *string `json:"turn_id" jsonschema:"nullable"`
	Model  string  `json:"model"`
	Scope  string  `json:"scope"`
}

// Usage is the vendor's own accounting for a request or a run; never computed.
type Usage struct {
	InputTokens              *uint64  `json:"input_tokens" jsonschema:"nullable"`
	OutputTokens             *uint64  `json:"output_tokens" jsonschema:"nullable"`
	CacheReadInputTokens     *uint64  `json:"cache_read_input_tokens" jsonschema:"nullable"`
	CacheCreationInputTokens *uint64  `json:"cache_creation_input_tokens" jsonschema:"nullable"`
	ServiceTier              *string  `json:"service_tier" jsonschema:"nullable"`
	ThinkingTokens           *uint64  `json:"thinking_tokens" jsonschema:"nullable"`
	Iterations               *uint64  `json:"iterations" jsonschema:"nullable"`
	Speed                    *string  `json:"speed" jsonschema:"nullable"`
	CostUSD                  *float64 `json:"cost_usd" jsonschema:"nullable"`
}

// Census sums metaharness's own decisions, by column, seam and decider.
type Census struct {
	Allowed   uint64 `json:"allowed"`
	Denied    uint64 `json:"denied"`
	Replaced  uint64 `json:"replaced"`
	Abstained uint64 `json:"abstained"`
	// NotOnWire counts the decision requests denied before any decision
	// because the model made no such call on the wire (H13): apart from
	// the decisions above, for none of them was a call.
	NotOnWire uint64 `json:"not_on_wire,omitempty"`
	// NotOnRecord counts the decision requests denied before any decision
	// because the vendor's own record did not show the call, or showed it
	// answered already (the b10x loop, whose wire nothing sees).
	NotOnRecord uint64            `json:"not_on_record,omitempty"`
	BySeam      map[string]uint64 `json:"by_seam"`
	ByDecider   map[string]uint64 `json:"by_decider"`
}

// Count adds one decision (its variant, the seam it was made at and who
// made it) to the census: the engine as it decides, a reader of a stream
// from its tool.decided events.
func (c *Census) Count(decision, seam, by string) {
	if c.BySeam == nil {
		c.BySeam, c.ByDecider = map[string]uint64{}, map[string]uint64{}
	}
	switch decision {
	case Allow:
		c.Allowed++
	case Deny:
		c.Denied++
	case Replace:
		c.Replaced++
	case Abstain:
		c.Abstained++
	}
	c.BySeam[seam]++
	c.ByDecider[by]++
}

// StepRef names the embedder's unit of work.
type StepRef struct {
	Workflow string `json:"workflow"`
	State    string `json:"state"`
	Index    uint32 `json:"index"`
	Attempt  uint32 `json:"attempt"`
}

// StepEntered opens an embedder step.
type StepEntered struct {
	Step        StepRef `json:"step"`
	FrameDigest *string `json:"frame_digest" jsonschema:"nullable"`
}

// StepLeft closes an embedder step.
type StepLeft struct {
	Step    StepRef     `json:"step"`
	Outcome StepOutcome `json:"outcome"`
}

// StepOutcome is completed, failed{reason} or no_verdict{reason}.
type StepOutcome struct {
	Outcome string `json:"outcome" jsonschema:"enum=completed,enum=failed,enum=no_verdict"`
	Reason  string `json:"reason,omitempty"`
}

// TurnStarted opens a vendor turn (turns count from 1).
type TurnStarted struct {
	Turn        uint32  `json:"turn"`
	FrameDigest *string `json:"frame_digest" jsonschema:"nullable"`
}

// TurnEnded closes a vendor turn; closing a turn abandons pending decisions.
type TurnEnded struct {
	Turn       uint32  `json:"turn"`
	StopReason *string `json:"stop_reason" jsonschema:"nullable"`
}

// Text is the model's user-facing text.
type Text struct {
	Text      string  `json:"text"`
	RequestID *string `json:"request_id" jsonschema:"nullable"`
}

// Thinking is reasoning text, kept apart from Text.
type Thinking struct {
	Text      string  `json:"text"`
	RequestID *string `json:"request_id" jsonschema:"nullable"`
}

// ThinkingEstimate is a live guess, never a billed figure.
type ThinkingEstimate struct {
	Estimate *uint64 `json:"estimate" jsonschema:"nullable"`
	Delta    *int64  `json:"delta" jsonschema:"nullable"`
}

// Injection is text the harness inserted (a skill body, a frame).
type Injection struct {
	Text   string  `json:"text"`
	Origin *string `json:"origin" jsonschema:"nullable"`
}

// ToolRequested is written before any decision or effect. When
// DecisionRequired is set the run is blocked until the embedder answers.
type ToolRequested struct {
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Input            json.RawMessage `json:"input"`
	Operations       []string        `json:"operations,omitempty"`
	Subjects         []string        `json:"subjects,omitempty"`
	DecisionRequired bool            `json:"decision_required"`
	DeadlineMS       *uint64         `json:"deadline_ms" jsonschema:"nullable"`
	Seam             string          `json:"seam"`
}

// Seams: where a call was presented (tool.requested.seam,
// tool.decided.seam, the census's by_seam), spelled here once for the
// engine, the decision channel and every kind's reader.
const (
	SeamRegistration   = "registration"
	SeamHook           = "hook"
	SeamControlRequest = "control_request"
	SeamOwnedTool      = "owned_tool"
	SeamNone           = "none"
)

// ToolDecided records one decision, in every mode.
type ToolDecided struct {
	CallID    string   `json:"call_id"`
	Decision  Decision `json:"decision"`
	DecidedBy string   `json:"decided_by"`
	Seam      string   `json:"seam"`
	LatencyMS *uint64  `json:"latency_ms" jsonschema:"nullable"`
}

// ToolResult is the vendor's result record. A call denied with nothing run is
// never faked as a result.
type ToolResult struct {
	ExitCode      *int            `json:"exit_code" jsonschema:"nullable"`
	OutcomeSource *string         `json:"outcome_source" jsonschema:"nullable"`
	CallID        string          `json:"call_id"`
	IsError       *bool           `json:"is_error" jsonschema:"nullable"`
	Content       json.RawMessage `json:"content"`
	Bytes         *uint64         `json:"bytes" jsonschema:"nullable"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
}

// UsageEvent is the vendor's accounting for one request or turn.
type UsageEvent struct {
	RequestID *string `json:"request_id" jsonschema:"nullable"`
	Model     *string `json:"model" jsonschema:"nullable"`
	Usage     Usage   `json:"usage"`
}

// RateLimit carries the vendor's rate-limit record.
type RateLimit struct {
	Info RateLimitInfo `json:"info"`
}

// RateLimitInfo is the vendor's rate-limit state, passed through.
type RateLimitInfo struct {
	Status       *string  `json:"status" jsonschema:"nullable"`
	Window       *string  `json:"window" jsonschema:"nullable"`
	ResetsAt     *int64   `json:"resets_at" jsonschema:"nullable"`
	Utilization  *float64 `json:"utilization" jsonschema:"nullable"`
	UsingOverage *bool    `json:"using_overage" jsonschema:"nullable"`
}

// CommandResult answers exactly one command, under the command's id.
type CommandResult struct {
	ID      string         `json:"id"`
	Outcome CommandOutcome `json:"outcome"`
}

// Warning is metaharness speaking, or a vendor record read fine with no
// other home.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Opaque stands for a vendor record nothing else maps; it is never dropped.
type Opaque struct {
	VendorType    *string `json:"vendor_type" jsonschema:"nullable"`
	VendorSubtype *string `json:"vendor_subtype" jsonschema:"nullable"`
	Digest        string  `json:"digest"`
	SourceLine    *uint64 `json:"source_line" jsonschema:"nullable"`
}

// AuthExpired: the credential aged out mid-run. Not terminal.
type AuthExpired struct {
	CredentialSource *string `json:"credential_source" jsonschema:"nullable"`
	Detail           *string `json:"detail" jsonschema:"nullable"`
	SourceLine       *uint64 `json:"source_line" jsonschema:"nullable"`
}

// StreamClosed is the last line of every stream. Only Writer.Close writes it.
type StreamClosed struct {
	Events  uint64   `json:"events"`
	Reason  string   `json:"reason" jsonschema:"enum=completed,enum=budget,enum=killed,enum=error,enum=steer-halt"`
	RunID   string   `json:"run_id"`
	Process *Process `json:"process" jsonschema:"nullable"`
}

// Process is how the child process ended, as the real runner saw it.
type Process struct {
	Kind   string `json:"kind" jsonschema:"enum=exited,enum=signaled,enum=unknown"`
	Code   *int   `json:"code,omitempty"`
	Signal *int   `json:"signal,omitempty"`
}

// Process kinds.
const (
	ProcessExited   = "exited"
	ProcessSignaled = "signaled"
	ProcessUnknown  = "unknown"
)

// Close reasons for stream.closed (never guessed).
const (
	ReasonCompleted = "completed"
	ReasonBudget    = "budget"
	ReasonKilled    = "killed"
	ReasonError     = "error"
	ReasonSteerHalt = "steer-halt"
)

func (*SessionStarted) EventName() string   { return "session.started" }
func (*SessionEnded) EventName() string     { return "session.ended" }
func (*StepEntered) EventName() string      { return "step.entered" }
func (*StepLeft) EventName() string         { return "step.left" }
func (*TurnStarted) EventName() string      { return "turn.started" }
func (*TurnEnded) EventName() string        { return "turn.ended" }
func (*Text) EventName() string             { return "text" }
func (*Thinking) EventName() string         { return "thinking" }
func (*ThinkingEstimate) EventName() string { return "thinking.estimate" }
func (*Injection) EventName() string        { return "injection" }
func (*ToolRequested) EventName() string    { return "tool.requested" }
func (*ToolDecided) EventName() string      { return "tool.decided" }
func (*ToolResult) EventName() string       { return "tool.result" }
func (*UsageEvent) EventName() string       { return "usage" }
func (*RateLimit) EventName() string        { return "rate_limit" }
func (*CommandResult) EventName() string    { return "command.result" }
func (*Warning) EventName() string          { return "warning" }
func (*Opaque) EventName() string           { return "opaque" }
func (*AuthExpired) EventName() string      { return "auth.expired" }
func (*StreamClosed) EventName() string     { return "stream.closed" }

// MarshalJSON writes every list of the attestation as an array, never null:
// an attestation always states its rows, even when a list is empty.
func (a Attestation) MarshalJSON() ([]byte, error) {
	type plain Attestation
	p := plain(a)
	p.Imposed = nonNil(p.Imposed)
	p.Unavailable = nonNil(p.Unavailable)
	p.Declared = nonNil(p.Declared)
	p.AmbientInputs = nonNil(p.AmbientInputs)
	p.InstalledPlugins = nonNil(p.InstalledPlugins)
	return marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
