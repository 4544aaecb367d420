package launcher

import (
	"encoding/json"
	"time"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Adapter is everything the run loop needs from one kind; a sub-package per
// kind implements it and holds everything vendor-specific.
type Adapter interface {
	// Capabilities is the kind's descriptor; the run refuses what it does
	// not honour.
	Capabilities() *Capabilities
	// BinaryName is the vendor program looked up on the child's PATH.
	BinaryName() string
	// ChildPath is the PATH the child gets, built from the caller's HOME.
	ChildPath(callerHome string) string
	// Plan is the pure launch plan.
	Plan(spec *Spec, w *World) (*Plan, error)
	// NewTranscript reads the vendor's record (its stdout).
	NewTranscript() Transcript
	// Resolve maps a vendor tool call to neutral operations and subjects;
	// cat is the run's tool contract, or nil.
	Resolve(cat *mcpserve.Contract) func(tool string, input json.RawMessage) frame.Resolution
	// OwnedTool is the name under which the model calls a catalogue entry
	// published as published.
	OwnedTool(published string) string
	// HookTimeout is the vendor's timeout for one decision at its hook; the
	// engine's deadline is strictly inside it.
	HookTimeout() time.Duration
	// CloseReason is the stream.closed reason the terminal record supports
	// (nil: there was none).
	CloseReason(terminal *record.SessionEnded) string
	// ContextChannel names how --context files reach the model.
	ContextChannel() string
	// LoopbackDefaults are the loopback proxy's default upstream and the
	// environment variable holding its token.
	LoopbackDefaults() (upstream, tokenEnv string)
}

// Transcript maps a vendor's record, line by line, to events.
type Transcript interface {
	Read(line []byte) []Item
	// Terminal is the session.ended the record produced, nil when none.
	Terminal() *record.SessionEnded
}

// Item is one event and the vendor timestamp it carries ("" when none).
type Item struct {
	At    string
	Event record.Event
}
