package b10x

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// Warning codes of metaharness's own about the loop's record.
const (
	// WarnNoTerminal: the record ended without a finished record.
	WarnNoTerminal = "NO_TERMINAL_RECORD"
	// WarnRefused: the loop refused the run before it started.
	WarnRefused = "LOOP_REFUSED"
)

// The two ways the loop's credential library says a secret reference failed
// (reference notes b10x-loop §6): the store answered and holds no such item,
// or the store could not be asked (no bus, no Secret Service, locked).
const (
	SecretMissing     = "secret reference was not found"
	SecretUnavailable = "secret is unavailable"
)

// Reader maps the loop's --json record (one object per line, tagged by
// "kind") to events, as the reference launcher does (reference notes
// b10x-loop §5): started, text-delta, turn-started, tool-requested,
// tool-completed, usage and warning have events of their own; cost is
// summed into session.ended.total_cost_usd; hook-ran that blocked or failed
// and approval-resolved that was denied are warnings (hook-refused,
// hook-failed, approval-denied), for what the loop's own approver and the
// caller's hooks refuse is no tool.decided of metaharness's; finished is the
// terminal record;
// every other kind, and every line that is not JSON, is opaque. It reads no
// clock.
//
// Model is the launch's, used when the record names none; a replay leaves
// it empty. The version, which the record never names, the run adds
// (Descriptor.VersionFromProbe).
type Reader struct {
	Model string

	line     uint64
	started  bool
	micro    uint64 // cost records summed, in micro-dollars
	priced   bool
	turnText strings.Builder // what the current turn streamed
	terminal *record.SessionEnded
	refused  *string
	fact     *Fact // what the last line said of one call
}

// Fact is what one line of the record says about the calls: the call the
// model made (tool-requested), what the loop's approver decided
// (approval-resolved) and its hooks at a point (hook-ran), how it ended
// (tool-completed), a warning (which, for an unpublished tool, is about
// the call in progress), or how the run ended (finished). A session that
// decides the loop's calls holds the record to its answers through them.
type Fact struct {
	Kind   string // tool-requested, approval-resolved, hook-ran, tool-completed, warning or finished
	CallID string
	// tool-requested
	Name      string
	Arguments json.RawMessage
	// approval-resolved
	Approved bool
	// hook-ran: the point and the decision's kind and reason
	Point, Decision, Reason string
	// tool-completed
	Failed bool
	// warning
	Code string
	// finished: the stop's kind
	Stop string
}

// Fact is what the line Read last mapped says of the calls, when it is
// one of the kinds that do.
func (r *Reader) Fact() (Fact, bool) {
	if r.fact == nil {
		return Fact{}, false
	}
	return *r.fact, true
}

var (
	_ kind.Transcript = (*Reader)(nil)
	_ kind.Ender      = (*Reader)(nil)
)

// Terminal is the session.ended of the first finished record, nil when the
// record had none.
func (r *Reader) Terminal() *record.SessionEnded { return r.terminal }

// Refused is the reason of the loop's refused record, when it wrote one.
func (r *Reader) Refused() (string, bool) {
	if r.refused == nil {
		return "", false
	}
	return *r.refused, true
}

// End says what the record's end means when there was no finished record:
// LOOP_REFUSED with the loop's reason, or NO_TERMINAL_RECORD.
func (r *Reader) End() []kind.Item {
	switch {
	case r.terminal != nil:
		return nil
	case r.refused != nil:
		return []kind.Item{{Event: &record.Warning{Code: WarnRefused, Message: "b10x-harness refused the run before it started: " + *r.refused}}}
	}
	return []kind.Item{{Event: &record.Warning{Code: WarnNoTerminal, Message: "the b10x-harness record ended without a finished record, so nobody knows how the run ended"}}}
}

// rec is every field of any kind the mapping reads.
type rec struct {
	Kind string `json:"kind"`
	// started
	Model          *string         `json:"model"`
	PublishedTools []string        `json:"published_tools"`
	Operations     []string        `json:"operations"`
	Withheld       json.RawMessage `json:"withheld"`
	Skills         []string        `json:"skills"`
	Agents         []string        `json:"agents"`
	MCP            []struct {
		Connection string `json:"connection"`
	} `json:"mcp"`
	CredentialSource *string `json:"credential_source"`
	Cwd              *string `json:"cwd"`
	// turn-started, finished
	Turn  *uint32 `json:"turn"`
	Turns *uint64 `json:"turns"`
	Stop  *struct {
		Kind  *string `json:"kind"`
		Turns *uint64 `json:"turns"`
	} `json:"stop"`
	// text-delta, warning
	Text    *string `json:"text"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	// tool-requested, tool-completed, approval-resolved, hook-ran
	Point     string          `json:"point"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Failed    *bool           `json:"failed"`
	Approved  *bool           `json:"approved"`
	Decision  *struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Program string `json:"program"`
	} `json:"decision"`
	// usage, cost
	InputTokens              *uint64 `json:"input_tokens"`
	OutputTokens             *uint64 `json:"output_tokens"`
	CachedInputTokens        *uint64 `json:"cached_input_tokens"`
	CacheCreationInputTokens *uint64 `json:"cache_creation_input_tokens"`
	MicroUSD                 *uint64 `json:"micro_usd"`
	// refused
	Reason *string `json:"reason"`
}

// Read maps one stdout line. Every non-blank line yields an event unless
// the reference mapping keeps its kind silent (tool-arguments-delta,
// approval-required, rates, cost, a hook that let the call proceed, an
// approval granted).
func (r *Reader) Read(raw []byte) []kind.Item {
	r.line++
	r.fact = nil
	raw = bytes.TrimRight(raw, "\r\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v rec
	if err := jsonscan.Unmarshal(raw, &v); err != nil {
		return r.items(r.opaque(raw, ""))
	}
	switch v.Kind {
	case "started":
		if r.started {
			return r.items(r.opaque(raw, v.Kind))
		}
		r.started = true
		return r.items(r.sessionStarted(&v))
	case "turn-started":
		if v.Turn == nil {
			break
		}
		r.turnText.Reset()
		return r.items(&record.TurnStarted{Turn: *v.Turn})
	case "turn-retried":
		// The loop discards what streamed for the turn; so does the answer.
		r.turnText.Reset()
	case "text-delta":
		if v.Text == nil {
			break
		}
		r.turnText.WriteString(*v.Text)
		return r.items(&record.Text{Text: *v.Text})
	case "tool-requested":
		r.fact = &Fact{Kind: v.Kind, CallID: v.CallID, Name: v.Name, Arguments: v.Arguments}
		return r.items(&record.ToolRequested{CallID: v.CallID, Name: v.Name, Input: v.Arguments, Seam: record.SeamNone})
	case "tool-completed":
		r.fact = &Fact{Kind: v.Kind, CallID: v.CallID, Failed: v.Failed != nil && *v.Failed}
		return r.items(&record.ToolResult{CallID: v.CallID, IsError: v.Failed})
	case "usage":
		model := v.Model
		return r.items(&record.UsageEvent{Model: model, Usage: record.Usage{
			InputTokens: v.InputTokens, OutputTokens: v.OutputTokens,
			CacheReadInputTokens: v.CachedInputTokens, CacheCreationInputTokens: v.CacheCreationInputTokens,
		}})
	case "cost":
		if v.MicroUSD != nil {
			r.micro += *v.MicroUSD
			r.priced = true
		}
		return nil
	case "warning":
		r.fact = &Fact{Kind: v.Kind, Code: v.Code}
		return r.items(&record.Warning{Code: v.Code, Message: v.Message})
	case "hook-ran":
		if v.Decision == nil {
			break
		}
		r.fact = &Fact{Kind: v.Kind, CallID: v.CallID, Point: v.Point, Decision: v.Decision.Kind, Reason: v.Decision.Reason}
		switch v.Decision.Kind {
		case "proceed":
			return nil
		case "block":
			return r.items(&record.Warning{Code: "hook-refused", Message: first(v.Decision.Reason, "a hook refused the call and gave no reason")})
		case "failed":
			return r.items(&record.Warning{Code: "hook-failed", Message: first(v.Decision.Reason, v.Decision.Program, "a hook could not be consulted")})
		}
	case "approval-resolved":
		if v.Approved == nil {
			break
		}
		r.fact = &Fact{Kind: v.Kind, CallID: v.CallID, Approved: *v.Approved}
		if *v.Approved {
			return nil
		}
		return r.items(&record.Warning{Code: "approval-denied", Message: "the approver denied " + v.CallID})
	case "tool-arguments-delta", "approval-required", "rates":
		return nil
	case "finished":
		if r.terminal != nil {
			break
		}
		r.terminal = r.sessionEnded(&v)
		r.fact = &Fact{Kind: v.Kind, Stop: *r.terminal.Subtype}
		return r.items(r.terminal)
	case "refused":
		if v.Reason != nil && r.refused == nil {
			r.refused = v.Reason
		}
	}
	return r.items(r.opaque(raw, v.Kind))
}

func (r *Reader) items(evs ...record.Event) []kind.Item {
	out := make([]kind.Item, len(evs))
	for i, e := range evs {
		out[i] = kind.Item{Event: e}
	}
	return out
}

func (r *Reader) opaque(raw []byte, kind string) *record.Opaque {
	sum := sha256.Sum256(raw)
	line := r.line
	vendor := "b10x"
	o := &record.Opaque{VendorType: &vendor, Digest: hex.EncodeToString(sum[:]), SourceLine: &line}
	if kind != "" {
		o.VendorSubtype = &kind
	}
	return o
}

func (r *Reader) sessionStarted(v *rec) *record.SessionStarted {
	s := &record.SessionStarted{
		Adapter: "b10x", AdapterClass: "direct_provider",
		Model: v.Model, CredentialSource: v.CredentialSource,
		OfferedTools: v.PublishedTools, AvailableOperations: v.Operations,
		Skills: nonNil(v.Skills), Agents: nonNil(v.Agents), MCPServers: []record.MCPServer{},
	}
	if s.Model == nil && r.Model != "" {
		s.Model = &r.Model
	}
	// The loop reports its directory only in builds that do (the seed:
	// since 0.15.1); where it does not, the record says nothing and H7 is
	// unk, never filled from the launch.
	if v.Cwd != nil && *v.Cwd != "" {
		s.Cwd = v.Cwd
	}
	if len(v.Withheld) > 0 && string(v.Withheld) != "null" {
		s.Withheld = []record.Withheld{}
		_ = jsonscan.Unmarshal(v.Withheld, &s.Withheld)
	}
	for _, m := range v.MCP {
		s.MCPServers = append(s.MCPServers, record.MCPServer{Name: m.Connection})
	}
	return s
}

func (r *Reader) sessionEnded(v *rec) *record.SessionEnded {
	kind := "unknown"
	var stopTurns *uint64
	if v.Stop != nil {
		if v.Stop.Kind != nil {
			kind = *v.Stop.Kind
		}
		stopTurns = v.Stop.Turns
	}
	isErr := kind != "completed"
	zero := uint64(0)
	e := &record.SessionEnded{
		IsError: &isErr, Subtype: &kind, TerminalReason: &kind,
		NumTurns: v.Turns, PermissionDenials: json.RawMessage("[]"), SubagentsSpawned: &zero,
	}
	if e.NumTurns == nil {
		e.NumTurns = stopTurns
	}
	if r.priced {
		usd := float64(r.micro) / 1e6
		e.TotalCostUSD = &usd
	}
	// The answer is what the last turn streamed, when the run completed.
	if !isErr && r.turnText.Len() > 0 {
		e.FinalAnswer = &record.FinalAnswer{Text: r.turnText.String()}
	}
	return e
}

// CloseReason is the stream.closed reason the terminal record supports:
// completed; budget for a bound the loop hit; killed when it was
// cancelled; error for any other stop, or none at all.
func CloseReason(t *record.SessionEnded) string {
	if t == nil || t.Subtype == nil {
		return record.ReasonError
	}
	switch *t.Subtype {
	case "completed":
		return record.ReasonCompleted
	case "max-turns", "max-input-tokens", "max-output-tokens", "max-cost", "deadline":
		return record.ReasonBudget
	case "cancelled":
		return record.ReasonKilled
	}
	return record.ReasonError
}

func first(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
