package kind

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Kind is one vendor kind as every verb sees it: a descriptor, which is
// data, and whatever of the kind is built, which the optional interfaces
// below say (Runner, Replayer, FlagProber). A sub-package per kind
// implements it; launcher/kinds is the table of them.
//
// A kind's plan claims the attestation's rows (attest.Claim) and then hands
// the claim to AttestConfinement, which edits H4, H6, H12 and H13: the plan
// must have claimed each of those, in whatever state, or the edit panics
// (an unclaimed row is a bug in the plan, never a silent no-op).
type Kind interface {
	Descriptor() *Descriptor
}

// Descriptor is what a kind is, as data the kind-neutral code reads instead
// of naming the kind.
type Descriptor struct {
	// Name is the kind on the command line (run NAME).
	Name string
	// Binary is the vendor program looked up on the child's PATH.
	Binary string
	// Install says how to put the pinned Binary where the child's PATH
	// finds it: the fix doctor and the vendor-not-found refusal print.
	Install string
	// Capabilities is what `capabilities NAME` prints; the run refuses what
	// it does not honour.
	Capabilities *Capabilities
	// ContextChannel names how --context files reach the model
	// (session.started.context_files[].channel).
	ContextChannel string
	// Upstream is the loopback proxy's default upstream, and TokenEnv the
	// caller's variable holding its token by default. UpstreamHeader is how
	// the upstream wants the token ("" is loopback's default, x-api-key).
	Upstream, TokenEnv string
	UpstreamHeader     loopback.HeaderStyle
	// ModelAPI is the model API the vendor speaks, by the name the scripted
	// servers take (anthropic-messages, openai-responses); "" for a kind
	// that speaks its own (b10x picks per run, --model-wire).
	ModelAPI string
	// TokenFile reads a --token-file's content the kind's way (a codex
	// auth.json, say); nil reads it as the token itself.
	TokenFile func(data []byte) (string, error)
	// RecordFormat names the kind's raw record for project --from
	// (claude-stream-json), "" when it has none a Replayer reads.
	RecordFormat string
	// Memory is how the kind's loader treats memory files (H11, the walk
	// before the spawn).
	Memory attest.Memory
	// Rules are what the kind accepts of a spec (the run's checkSpec).
	Rules Rules
	// Catalogue is how the kind carries --catalogue (the contract's
	// run-time checks).
	Catalogue mcpserve.Carriage
	// Confined: the kind's plan confines its child (Confinement), so a
	// run first asks whether the host can (confine.Probe).
	Confined bool
	// VersionFromProbe: the kind's record names no vendor version, so
	// session.started carries what its --version said (H1 reads it).
	VersionFromProbe bool
	// StopSignal is the signal the vendor answers by ending its session
	// with a terminal record of its own (the b10x loop's SIGINT), sent to
	// its process group first whenever the run stops it; 0 for none.
	StopSignal syscall.Signal
}

// Runner is a kind whose run loop is built. `run NAME` on a kind that is
// not one refuses not-built, after every check of the spec.
type Runner interface {
	Kind
	// Plan is the pure launch plan (what C1 vectors pin).
	Plan(spec *Spec, w *World) (*Plan, error)
	// Resolve maps a vendor tool call to neutral operations and subjects;
	// cat is the run's tool contract, or nil.
	Resolve(cat *mcpserve.Contract) func(tool string, input json.RawMessage) frame.Resolution
	// VendorTimeout is how long the vendor waits for one decision (its hook
	// or callback timeout); the engine's deadline is strictly inside it.
	VendorTimeout() time.Duration
	// NewSession makes the driver of one session's child from the spec and
	// the plan it was launched with. It is called before the spawn, once the
	// run's services exist.
	NewSession(spec *Spec, plan *Plan, run Services) Session
	// CloseReason is the stream.closed reason the terminal record supports
	// (nil: there was none).
	CloseReason(terminal *record.SessionEnded) string
}

// Session drives one child from its spawn to its end. The run hands it the
// child's pipes and keeps everything else: the decision engine, the event
// stream, the catalogue's performers, the child's process group, the
// commands on stdin, the wind-up and the attestation.
//
// The two shapes of child both fit: one whose record is read (Claude Code:
// stream-json on stdout, its calls decided over the decision channel by the
// hook and mcp-serve it starts, see Answerer) and one the run converses with
// (codex app-server: JSON-RPC over the child's stdin and stdout, where the
// session answers the child's requests through the engine and Perform, and
// sends it control requests from Control).
type Session interface {
	// Drive reads the child's stdout to its end (and, for a conversing
	// kind, writes its stdin), keeping every line it exchanges in
	// p.Transcript. It returns the terminal record, nil when there was none;
	// the run sets the census into it and emits it.
	Drive(ctx context.Context, p Pipes) *record.SessionEnded
	// Control applies a command the kind's descriptor honours beyond the
	// engine's own (interrupt, halt, steer, …) to the live child. It is
	// called from the command reader, while Drive runs.
	Control(c record.Command) error
}

// SpecChecker is a kind with refusals of its own that read only the spec.
// The run calls CheckSpec after the kind-neutral checks, before anything
// starts.
type SpecChecker interface {
	CheckSpec(spec *Spec) error
}

// FlagsKind is a kind with run flags of its own (KindFlags).
type FlagsKind interface {
	NewFlags() KindFlags
}

// Refuser is a session whose child can refuse its launch after the spawn,
// before any model request (the b10x loop's refused record). The run closes
// the stream and returns the refusal (exit 2) instead of an attestation.
type Refuser interface {
	Refusal() error
}

// Observer is a kind that looks at its binary before planning, beyond
// --version: what it sees goes into World.Vendor (or corrects World.Binary,
// say to a native binary behind a wrapper), so that the plan stays a pure
// function of the spec and the world. A refusal here starts nothing more.
type Observer interface {
	Observe(ctx context.Context, spec *Spec, w *World) error
}

// Preflighter is a kind that puts the written scratch files to its binary
// before the spawn (codex's --strict-config): a configuration the binary
// rejects is a refusal, never a half-started session.
type Preflighter interface {
	Preflight(ctx context.Context, plan *Plan) error
}

// Answerer is a session whose child's programs ask over the decision channel
// (internal/decide). A session that is not one has its channel requests
// decided by Services.Decide.
type Answerer interface {
	Answer(ctx context.Context, req decide.Request) record.Decision
}

// HookEndpoint is a kind whose vendor posts each call's decision request
// itself, over HTTP, to the run's decision endpoint (World.DecisionAddr,
// internal/decidehttp): Claude Code's http hook. The run serves it,
// checks who posts (the run's token, the vendor's own connection) and the
// bounds; the kind reads the vendor's payload and writes its answer. The
// request is answered as one of the decision channel's (Answerer).
type HookEndpoint interface {
	// HookRequest reads the vendor's payload as a decision request.
	HookRequest(body []byte) (decide.Request, error)
	// HookAnswer renders a decision as the vendor reads its hook's answer.
	HookAnswer(d record.Decision) []byte
}

// RecordChecker is a session that holds decision requests to its child's
// own record where no wire is seen (b10x): census.not_on_record counts the
// requests it denied before any decision, as not_on_wire counts the wire
// check's.
type RecordChecker interface {
	RequestsNotOnRecord() uint64
}

// Pipes are the child's ends a session drives.
type Pipes struct {
	// Stdin is the child's stdin when the plan asked for a pipe
	// (Plan.StdinPipe), else nil (the child reads /dev/null).
	Stdin io.WriteCloser
	// Stdout is the child's stdout, read to its end.
	Stdout io.Reader
	// Transcript keeps the raw record: what --retain-dir copies and the
	// auditor reads.
	Transcript io.Writer
}

// Services are what the run offers a session. Every method is safe to call
// from any goroutine.
type Services interface {
	// Engine decides calls (Observe, Request, Decide) and keeps turns.
	Engine() *frame.Engine
	// Contract is the run's checked tool contract (--catalogue), nil
	// without one.
	Contract() *mcpserve.Contract
	// Started completes the vendor's opening record with metaharness's own
	// facts (the attestation, the transcript, the context files, the
	// catalogue's operations) and emits it.
	Started(at string, ev *record.SessionStarted)
	// Emit writes an event into the stream; at is the vendor's timestamp,
	// "" for none.
	Emit(at string, ev record.Event)
	// Decide decides a request of the decision channel: a catalogue call
	// under its name inside the run, any other under its own name.
	Decide(ctx context.Context, req decide.Request) record.Decision
	// Perform runs a catalogue call in-process through mcpserve's
	// Server.Call on the run's checked catalogue, in the child's cwd: the
	// same argument checks, decision (at the owned_tool seam) and
	// performers as mcp-serve. callID "" makes one.
	Perform(ctx context.Context, tool string, args json.RawMessage, callID string) (text string, isError bool, err error)
	// Stop ends the child's whole process group; it returns at once.
	Stop()
	// Verify holds a call the vendor asks about to the wire
	// (launcher/wirecheck.go): nil for the model's call, else the deny to
	// answer with (recorded, and counted apart from decisions). Decide and
	// Perform verify already; a session that asks the engine itself calls
	// it first.
	Verify(req decide.Request) *record.Decision
	// Wire is the proxy's view of what the model emitted, nil when the
	// run's model traffic does not pass the proxy.
	Wire() *WireView
	// NotOnWire records a vendor line that claims model output the wire
	// does not hold: a warning saying what, never the model's words.
	NotOnWire(what string)
}

// Replayer is a kind whose raw record can be read back without a run (C2
// replays, project --from).
type Replayer interface {
	Kind
	// NewTranscript reads the vendor's record, line by line.
	NewTranscript() Transcript
	CloseReason(terminal *record.SessionEnded) string
}

// Transcript maps a vendor's record, line by line, to events.
type Transcript interface {
	Read(line []byte) []Item
	// Terminal is the session.ended the record produced, nil when none.
	Terminal() *record.SessionEnded
}

// Ender is a transcript with something to say once the record has ended
// (the b10x loop's missing terminal record). A session emits End's items
// after the last line, and so does a replay.
type Ender interface {
	End() []Item
}

// Item is one event and the vendor timestamp it carries ("" when none).
type Item struct {
	At    string
	Event record.Event
}

// CatalogueName is the name under which the model calls the catalogue entry
// published as published, by the descriptor's catalogue rendering; "" when
// the kind carries no catalogue.
func (d *Descriptor) CatalogueName(published string) string {
	if d.Capabilities == nil || d.Capabilities.CatalogueRendering == nil {
		return ""
	}
	return strings.ReplaceAll(*d.Capabilities.CatalogueRendering, "{mcp}", published)
}

// LoopbackClient is a kind whose child can reach its model only through the
// loopback proxy (--credentials loopback, and the loopback verb's start
// line).
type LoopbackClient interface {
	Kind
	// LoopbackEnv is what the child needs in its environment for that: the
	// proxy's address and placeholder under the vendor's own variables, and
	// the egress gate (loopback.Proxy.GateEnv).
	LoopbackEnv(p *loopback.Proxy) (map[string]string, error)
}

// ModelProvider is a LoopbackClient that reaches the proxy through a
// provider entry of its own configuration, which the loopback verb prints
// for an embedder to write into the child's config.
type ModelProvider interface {
	LoopbackClient
	LoopbackProvider(p *loopback.Proxy) (id, config string, err error)
}
