package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// Reader maps Claude Code's stream-json records (its stdout) to events. It
// reads no clock: an event's "at" is the record's own timestamp or absent.
// Tool calls come out as record.ToolRequested for the launcher to hand to
// the decision engine as observations; session.started comes out with only
// the vendor's fields, for the launcher to complete with its own.
type Reader struct {
	line     uint64
	terminal *record.SessionEnded
	messages map[string]bool // assistant message ids whose usage was reported
	models   []string        // models seen on assistant records, in order
}

// OwnedPrefix is how the catalogue server's tools are named to the model.
const OwnedPrefix = "mcp__metaharness__"

// Terminal returns the session.ended the record produced, or nil when the
// stream had no terminal record.
func (r *Reader) Terminal() *record.SessionEnded { return r.terminal }

// Read maps one stdout line. Every non-blank line yields at least one event:
// a record nothing else maps becomes opaque, never dropped.
func (r *Reader) Read(raw []byte) []kind.Item {
	r.line++
	raw = bytes.TrimRight(raw, "\r\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	rec, ok := kindOf(raw)
	if !ok {
		return []kind.Item{{Event: r.opaque(raw, nil, nil)}}
	}
	var out []record.Event
	switch rec.Type {
	case "system":
		out = r.system(raw, rec.Subtype)
	case "assistant":
		out = r.assistant(raw)
	case "user":
		out = r.user(raw)
	case "attachment":
		out = r.attachment(raw)
	case "rate_limit_event":
		out = r.rateLimit(raw)
	case "result":
		out = r.result(raw)
	}
	if len(out) == 0 {
		if !json.Valid(raw) {
			// The kind was read off a line that is not JSON: it says nothing.
			return []kind.Item{{Event: r.opaque(raw, nil, nil)}}
		}
		out = []record.Event{r.opaque(raw, &rec.Type, &rec.Subtype)}
	}
	items := make([]kind.Item, len(out))
	for i, e := range out {
		items[i] = kind.Item{At: rec.Timestamp, Event: e}
	}
	return items
}

// recordKind is what a record's top level says it is.
type recordKind struct{ Type, Subtype, Timestamp string }

var kindKeys = []string{"type", "subtype", "timestamp"}

// kindOf takes type, subtype and timestamp off the record's top level
// (kind.TopStrings). Not ok: the line is not a JSON object, or one of the
// three is not a string.
func kindOf(raw []byte) (recordKind, bool) {
	var k recordKind
	ok := kind.TopStrings(raw, kindKeys, &k.Type, &k.Subtype, &k.Timestamp)
	return k, ok
}

func (r *Reader) opaque(raw []byte, typ, subtype *string) *record.Opaque {
	return kind.Opaque(raw, r.line, typ, subtype)
}

func (r *Reader) system(raw []byte, subtype string) []record.Event {
	switch subtype {
	case "init":
		var v struct {
			Version        *string  `json:"claude_code_version"`
			SessionID      *string  `json:"session_id"`
			Model          *string  `json:"model"`
			PermissionMode *string  `json:"permissionMode"`
			APIKeySource   *string  `json:"apiKeySource"`
			OutputStyle    *string  `json:"output_style"`
			Cwd            *string  `json:"cwd"`
			Tools          []string `json:"tools"`
			SlashCommands  []string `json:"slash_commands"`
			Skills         []string `json:"skills"`
			Agents         []string `json:"agents"`
			Plugins        []struct {
				Name    string  `json:"name"`
				Path    *string `json:"path"`
				Source  *string `json:"source"`
				Version *string `json:"version"`
			} `json:"plugins"`
			MCPServers []record.MCPServer `json:"mcp_servers"`
		}
		if jsonscan.Unmarshal(raw, &v) != nil {
			return nil
		}
		s := &record.SessionStarted{
			Adapter: "claude", AdapterClass: "harness",
			HarnessVersion: v.Version, SessionID: v.SessionID, Model: v.Model,
			PermissionMode: v.PermissionMode, CredentialSource: v.APIKeySource,
			OutputStyle: v.OutputStyle, Cwd: v.Cwd, OfferedTools: v.Tools,
			SlashCommands: v.SlashCommands, Skills: v.Skills, Agents: v.Agents,
			MCPServers: v.MCPServers,
		}
		if v.Plugins != nil {
			s.Plugins = []record.Plugin{}
			for _, p := range v.Plugins {
				src := p.Source
				if src == nil {
					src = p.Path
				}
				s.Plugins = append(s.Plugins, record.Plugin{Name: p.Name, Source: src, Version: p.Version})
			}
		}
		return []record.Event{s}
	case "thinking_tokens":
		var v struct {
			Estimate *uint64 `json:"estimated_tokens"`
			Delta    *int64  `json:"estimated_tokens_delta"`
		}
		if jsonscan.Unmarshal(raw, &v) != nil {
			return nil
		}
		return []record.Event{&record.ThinkingEstimate{Estimate: v.Estimate, Delta: v.Delta}}
	case "api_retry":
		var v struct {
			Attempt    *int `json:"attempt"`
			MaxRetries *int `json:"max_retries"`
		}
		if jsonscan.Unmarshal(raw, &v) != nil || v.Attempt == nil {
			return nil
		}
		msg := "the vendor retried a model request (attempt " + strconv.Itoa(*v.Attempt)
		if v.MaxRetries != nil {
			msg += " of " + strconv.Itoa(*v.MaxRetries)
		}
		return []record.Event{&record.Warning{Code: "VENDOR_API_RETRY", Message: msg + ")"}}
	}
	return nil
}

type contentBlock struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	Thinking *string         `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	IsError   *bool           `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// SyntheticModel is the model Claude Code names on the assistant lines it
// writes itself (an API error, a lost connection), and WarnVendorText the
// warning their text is recorded as: the vendor's words, not the model's.
const (
	SyntheticModel = "<synthetic>"
	WarnVendorText = "VENDOR_TEXT"
)

func (r *Reader) assistant(raw []byte) []record.Event {
	var v struct {
		Message struct {
			ID      string          `json:"id"`
			Model   string          `json:"model"`
			Content []contentBlock  `json:"content"`
			Usage   json.RawMessage `json:"usage"`
		} `json:"message"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	m := v.Message
	var reqID *string
	if m.ID != "" {
		reqID = &m.ID
	}
	var out []record.Event
	for _, b := range m.Content {
		switch {
		case b.Type == "text" && b.Text != nil && m.Model == SyntheticModel:
			// Claude Code's own words (an API error, say), never the model's.
			out = append(out, &record.Warning{Code: WarnVendorText, Message: *b.Text})
		case b.Type == "text" && b.Text != nil:
			out = append(out, &record.Text{Text: *b.Text, RequestID: reqID})
		case b.Type == "thinking" && b.Thinking != nil:
			out = append(out, &record.Thinking{Text: *b.Thinking, RequestID: reqID})
		case b.Type == "tool_use" && b.ID != "":
			out = append(out, &record.ToolRequested{CallID: b.ID, Name: b.Name, Input: b.Input, Seam: SeamOf(b.Name)})
		default:
			typ, sub := "assistant", b.Type
			out = append(out, r.opaque(raw, &typ, &sub))
		}
	}
	if m.Model != "" && m.Model != SyntheticModel && !contains(r.models, m.Model) {
		r.models = append(r.models, m.Model)
	}
	if m.ID != "" && len(m.Usage) > 0 && !r.messages[m.ID] {
		if r.messages == nil {
			r.messages = map[string]bool{}
		}
		r.messages[m.ID] = true
		var model *string
		if m.Model != "" {
			model = &m.Model
		}
		out = append(out, &record.UsageEvent{RequestID: reqID, Model: model, Usage: usage(m.Usage)})
	}
	return out
}

// SeamOf names the seam a Claude tool call is decided at: the catalogue
// server's own channel for its tools, the PreToolUse hook for the rest.
func SeamOf(tool string) string {
	if strings.HasPrefix(tool, OwnedPrefix) {
		return record.SeamOwnedTool
	}
	return record.SeamHook
}

func (r *Reader) user(raw []byte) []record.Event {
	var v struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		IsSynthetic   bool            `json:"isSynthetic"`
		ToolUseResult json.RawMessage `json:"tool_use_result"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	origin := "user"
	if v.IsSynthetic {
		origin = "synthetic"
	}
	var text string
	if jsonscan.Unmarshal(v.Message.Content, &text) == nil {
		return []record.Event{&record.Injection{Text: text, Origin: &origin}}
	}
	var blocks []contentBlock
	if jsonscan.Unmarshal(v.Message.Content, &blocks) != nil {
		return nil
	}
	var out []record.Event
	for _, b := range blocks {
		switch {
		case b.Type == "tool_result":
			n := uint64(len(b.Content))
			isErr := b.IsError
			if isErr == nil {
				f := false
				isErr = &f
			}
			out = append(out, &record.ToolResult{CallID: b.ToolUseID, IsError: isErr, Content: b.Content, Bytes: &n, ToolUseResult: v.ToolUseResult})
			if w := hookFailed(b.ToolUseID, *isErr, b.Content); w != nil {
				out = append(out, w)
			}
		case b.Type == "text" && b.Text != nil:
			out = append(out, &record.Injection{Text: *b.Text, Origin: &origin})
		default:
			typ, sub := "user", b.Type
			out = append(out, r.opaque(raw, &typ, &sub))
		}
	}
	return out
}

// WarnHookFailed: Claude Code blocked a call because its PreToolUse hook
// could not ask the run (no connection, a timeout, a non-2xx answer, one
// it could not read): the hook's onFailure "block" at work. Nothing ran,
// and no seam decided the call.
const WarnHookFailed = "DECISION_HOOK_FAILED"

// hookFailure is the error result 2.1.328 gives a call its PreToolUse hook
// blocked under onFailure "block" (docs/wire-facts.md A9): the tool, the
// hook's URL, and what failed, on the lines after.
var hookFailure = regexp.MustCompile(`^PreToolUse:(\S+) hook error: \[([^\]\n]*)\]: ([^\n]*?); blocking because onFailure is "block"(?s:\n(.*))?$`)

// hookFailed is the warning for a tool result that is the hook's failure,
// nil for any other.
func hookFailed(callID string, isErr bool, content json.RawMessage) *record.Warning {
	var text string
	if !isErr || jsonscan.Unmarshal(content, &text) != nil {
		return nil
	}
	m := hookFailure.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	why := m[3]
	if m[4] != "" {
		why += ": " + strings.TrimSpace(m[4])
	}
	return &record.Warning{Code: WarnHookFailed, Message: fmt.Sprintf("Claude Code blocked call %s (%s): its PreToolUse hook at %s %s, and onFailure \"block\" stops the call there; nothing ran, and no seam decided it", callID, m[1], m[2], why)}
}

// attachment reads a line carrying something into the model's context
// beside the conversation (a queued command, another session's message):
// its text is recorded as an injection, origin the attachment's type, and
// never only as an opaque line's digest. One with no text of its own stays
// opaque.
func (r *Reader) attachment(raw []byte) []record.Event {
	var v struct {
		Attachment struct {
			Type    string          `json:"type"`
			Prompt  json.RawMessage `json:"prompt"`
			Content json.RawMessage `json:"content"`
		} `json:"attachment"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	a := v.Attachment
	origin := "attachment"
	if a.Type != "" {
		origin += ":" + a.Type
	}
	var out []record.Event
	for _, field := range []json.RawMessage{a.Prompt, a.Content} {
		if text := textOf(field); text != "" {
			out = append(out, &record.Injection{Text: text, Origin: &origin})
		}
	}
	return out
}

// textOf is a JSON value's text: a string, or the text blocks of a
// content array joined; "" for anything else.
func textOf(v json.RawMessage) string {
	var s string
	if jsonscan.Unmarshal(v, &s) == nil {
		return s
	}
	var blocks []contentBlock
	if jsonscan.Unmarshal(v, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != nil {
			parts = append(parts, *b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (r *Reader) rateLimit(raw []byte) []record.Event {
	var v struct {
		Info struct {
			Status       *string  `json:"status"`
			Type         *string  `json:"rateLimitType"`
			ResetsAt     *int64   `json:"resetsAt"`
			Utilization  *float64 `json:"utilization"`
			UsingOverage *bool    `json:"isUsingOverage"`
		} `json:"rate_limit_info"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	i := v.Info
	return []record.Event{&record.RateLimit{Info: record.RateLimitInfo{Status: i.Status, Window: i.Type, ResetsAt: i.ResetsAt, Utilization: i.Utilization, UsingOverage: i.UsingOverage}}}
}

func (r *Reader) result(raw []byte) []record.Event {
	var v struct {
		Subtype           *string                    `json:"subtype"`
		IsError           *bool                      `json:"is_error"`
		Result            *string                    `json:"result"`
		StopReason        *string                    `json:"stop_reason"`
		TerminalReason    *string                    `json:"terminal_reason"`
		APIErrorStatus    *int                       `json:"api_error_status"`
		NumTurns          *uint64                    `json:"num_turns"`
		DurationMS        *uint64                    `json:"duration_ms"`
		DurationAPIMS     *uint64                    `json:"duration_api_ms"`
		TTFTMS            *uint64                    `json:"ttft_ms"`
		TimeToRequestMS   *uint64                    `json:"time_to_request_ms"`
		TotalCostUSD      *float64                   `json:"total_cost_usd"`
		PermissionDenials json.RawMessage            `json:"permission_denials"`
		Usage             json.RawMessage            `json:"usage"`
		ModelUsage        map[string]json.RawMessage `json:"modelUsage"`
		SubagentStats     *struct {
			Spawned *uint64 `json:"spawned"`
		} `json:"subagent_stats"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	e := &record.SessionEnded{
		IsError: v.IsError, Subtype: v.Subtype, StopReason: v.StopReason,
		TerminalReason: v.TerminalReason, APIErrorStatus: v.APIErrorStatus,
		NumTurns: v.NumTurns, DurationMS: v.DurationMS, DurationAPIMS: v.DurationAPIMS,
		TTFTMS: v.TTFTMS, TimeToRequestMS: v.TimeToRequestMS, TotalCostUSD: v.TotalCostUSD,
		PermissionDenials: v.PermissionDenials,
	}
	if v.IsError != nil && !*v.IsError && v.Result != nil && strings.TrimSpace(*v.Result) != "" {
		e.FinalAnswer = &record.FinalAnswer{Text: *v.Result}
	}
	for _, m := range r.models {
		e.ObservedModels = append(e.ObservedModels, record.ObservedModel{Turn: 1, Model: m, Scope: "turn_selection"})
	}
	if len(v.Usage) > 0 && string(v.Usage) != "null" {
		u := usage(v.Usage)
		e.Usage = &u
	}
	if v.ModelUsage != nil {
		e.ModelUsage = map[string]record.Usage{}
		for model, raw := range v.ModelUsage {
			e.ModelUsage[model] = modelUsage(raw)
		}
	}
	if v.SubagentStats != nil {
		e.SubagentsSpawned = v.SubagentStats.Spawned
	}
	r.terminal = e
	out := []record.Event{e}
	if v.Result != nil && authExpired(*v.Result) {
		src := "claude result"
		line := r.line
		out = append([]record.Event{&record.AuthExpired{CredentialSource: &src, Detail: v.Result, SourceLine: &line}}, out...)
	}
	return out
}

// authExpired reports whether vendor text says the credential aged out.
func authExpired(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{"session has expired", "session expired", "failed to refresh access token", "please run /login"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func usage(raw json.RawMessage) record.Usage {
	var v struct {
		Input         *uint64 `json:"input_tokens"`
		Output        *uint64 `json:"output_tokens"`
		CacheRead     *uint64 `json:"cache_read_input_tokens"`
		CacheCreation *uint64 `json:"cache_creation_input_tokens"`
		ServiceTier   *string `json:"service_tier"`
		Speed         *string `json:"speed"`
		Details       *struct {
			Thinking *uint64 `json:"thinking_tokens"`
		} `json:"output_tokens_details"`
	}
	_ = jsonscan.Unmarshal(raw, &v)
	u := record.Usage{InputTokens: v.Input, OutputTokens: v.Output, CacheReadInputTokens: v.CacheRead,
		CacheCreationInputTokens: v.CacheCreation, ServiceTier: v.ServiceTier, Speed: v.Speed}
	if v.Details != nil {
		u.ThinkingTokens = v.Details.Thinking
	}
	return u
}

func modelUsage(raw json.RawMessage) record.Usage {
	var v struct {
		Input         *uint64  `json:"inputTokens"`
		Output        *uint64  `json:"outputTokens"`
		CacheRead     *uint64  `json:"cacheReadInputTokens"`
		CacheCreation *uint64  `json:"cacheCreationInputTokens"`
		Thinking      *uint64  `json:"thinkingTokens"`
		Cost          *float64 `json:"costUSD"`
	}
	_ = jsonscan.Unmarshal(raw, &v)
	return record.Usage{InputTokens: v.Input, OutputTokens: v.Output, CacheReadInputTokens: v.CacheRead,
		CacheCreationInputTokens: v.CacheCreation, ThinkingTokens: v.Thinking, CostUSD: v.Cost}
}

// CloseReason is the stream.closed reason the terminal record supports:
// completed, budget, or error (an error record, or none at all).
func CloseReason(t *record.SessionEnded) string {
	switch {
	case t == nil:
		return record.ReasonError
	case t.Subtype != nil && *t.Subtype == "error_max_budget_usd":
		return record.ReasonBudget
	case t.IsError == nil || *t.IsError:
		return record.ReasonError
	}
	return record.ReasonCompleted
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
