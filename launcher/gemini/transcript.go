package gemini

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// Warning codes of Gemini CLI's own lines: its error events (a loop it
// detected, the turn limit, a blocked agent, an invalid stream), by
// severity.
const (
	WarnVendorError   = "VENDOR_ERROR"
	WarnVendorWarning = "VENDOR_WARNING"
)

// Reader maps Gemini CLI's -o stream-json records (its stdout) to events.
// It reads no clock: an event's "at" is the record's own timestamp. The
// assistant's text arrives in deltas, one per chunk of the model's stream;
// the reader joins them into one text, recorded when the next record that
// is not a delta arrives (or the stream ends), and the text after the last
// tool result is the final answer. Tool calls come out as
// record.ToolRequested for the session to hand the engine as
// observations; session.started comes out with the vendor's fields only.
type Reader struct {
	line     uint64
	terminal *record.SessionEnded
	text     strings.Builder // the deltas not recorded yet
	textAt   string
	final    strings.Builder // the text since the last tool result
	started  bool
}

// Terminal returns the session.ended the record produced, or nil.
func (r *Reader) Terminal() *record.SessionEnded { return r.terminal }

// Read maps one stdout line. A record nothing else maps becomes opaque,
// never dropped.
func (r *Reader) Read(raw []byte) []kind.Item {
	r.line++
	raw = bytes.TrimRight(raw, "\r\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	head, ok := headOf(raw)
	if ok && head.Type == "message" && head.Role == "assistant" {
		if r.delta(raw, head.Timestamp) {
			return nil
		}
	}
	items := r.flush()
	if !ok {
		return append(items, kind.Item{Event: r.opaque(raw, nil, nil)})
	}
	var out []record.Event
	switch head.Type {
	case "init":
		out = r.init(raw)
	case "tool_use":
		out = r.toolUse(raw)
	case "tool_result":
		out = r.toolResult(raw)
	case "error":
		out = r.errorLine(raw)
	case "result":
		out = r.result(raw)
	}
	if len(out) == 0 {
		typ, role := head.Type, head.Role
		out = []record.Event{r.opaque(raw, &typ, &role)}
	}
	for _, e := range out {
		items = append(items, kind.Item{At: head.Timestamp, Event: e})
	}
	return items
}

// End is what the record says once it has ended: a text still held.
func (r *Reader) End() []kind.Item { return r.flush() }

var _ kind.Ender = (*Reader)(nil)

// recordHead is what a record's top level says it is.
type recordHead struct{ Type, Role, Timestamp string }

var headKeys = []string{"type", "role", "timestamp"}

// headOf takes type, role and timestamp off the record's top level. Not
// ok: not a JSON object, one of them not a string, or no type.
func headOf(raw []byte) (recordHead, bool) {
	var h recordHead
	ok := kind.TopStrings(raw, headKeys, &h.Type, &h.Role, &h.Timestamp)
	return h, ok && h.Type != ""
}

// delta takes an assistant delta; false when the line is not one.
func (r *Reader) delta(raw []byte, at string) bool {
	var v struct {
		Content *string `json:"content"`
		Delta   bool    `json:"delta"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil || v.Content == nil {
		return false
	}
	if r.text.Len() == 0 {
		r.textAt = at
	}
	r.text.WriteString(*v.Content)
	r.final.WriteString(*v.Content)
	return true
}

// flush records the text the deltas made, if any.
func (r *Reader) flush() []kind.Item {
	if r.text.Len() == 0 {
		return nil
	}
	t := &record.Text{Text: r.text.String()}
	at := r.textAt
	r.text.Reset()
	return []kind.Item{{At: at, Event: t}}
}

func (r *Reader) opaque(raw []byte, typ, subtype *string) *record.Opaque {
	return kind.Opaque(raw, r.line, typ, subtype)
}

func (r *Reader) init(raw []byte) []record.Event {
	var v struct {
		SessionID *string `json:"session_id"`
		Model     *string `json:"model"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil || r.started {
		return nil // a second one is opaque
	}
	r.started = true
	return []record.Event{&record.SessionStarted{Adapter: "gemini", AdapterClass: "harness", SessionID: v.SessionID, Model: v.Model}}
}

func (r *Reader) toolUse(raw []byte) []record.Event {
	var v struct {
		Name   string          `json:"tool_name"`
		ID     string          `json:"tool_id"`
		Params json.RawMessage `json:"parameters"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil || v.ID == "" {
		return nil
	}
	return []record.Event{&record.ToolRequested{CallID: v.ID, Name: v.Name, Input: v.Params, Seam: SeamOf(v.Name)}}
}

// SeamOf names the seam a Gemini CLI tool call is decided at: the owned
// server's own channel for its tools, the BeforeTool hook for the rest.
func SeamOf(tool string) string {
	if strings.HasPrefix(tool, OwnedPrefix) {
		return record.SeamOwnedTool
	}
	return record.SeamHook
}

func (r *Reader) toolResult(raw []byte) []record.Event {
	var v struct {
		ID     string  `json:"tool_id"`
		Status string  `json:"status"`
		Output *string `json:"output"`
		Error  *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil || v.ID == "" {
		return nil
	}
	r.final.Reset()
	isErr := v.Status == "error"
	text := ""
	switch {
	case v.Output != nil:
		text = *v.Output
	case v.Error != nil:
		text = v.Error.Message
	}
	content, _ := json.Marshal(text)
	n := uint64(len(content))
	return []record.Event{&record.ToolResult{CallID: v.ID, IsError: &isErr, Content: content, Bytes: &n}}
}

func (r *Reader) errorLine(raw []byte) []record.Event {
	var v struct {
		Severity string `json:"severity"`
		Message  string `json:"message"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	code := WarnVendorWarning
	if v.Severity == "error" {
		code = WarnVendorError
	}
	return []record.Event{&record.Warning{Code: code, Message: "Gemini CLI: " + v.Message}}
}

// apiStatus finds the HTTP status of an API error in Gemini CLI's message
// ("[API Error: {\"error\":{\"code\":401,…").
var apiStatus = regexp.MustCompile(`"code\\?"\s*:\s*([1-5][0-9][0-9])\b`)

func (r *Reader) result(raw []byte) []record.Event {
	var v struct {
		Status string `json:"status"`
		Error  *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Stats *struct {
			Input      *uint64 `json:"input_tokens"`
			Output     *uint64 `json:"output_tokens"`
			Cached     *uint64 `json:"cached"`
			DurationMS *uint64 `json:"duration_ms"`
			Models     map[string]struct {
				Input  *uint64 `json:"input_tokens"`
				Output *uint64 `json:"output_tokens"`
				Cached *uint64 `json:"cached"`
			} `json:"models"`
		} `json:"stats"`
	}
	if jsonscan.Unmarshal(raw, &v) != nil {
		return nil
	}
	isErr := v.Status != "success"
	status := v.Status
	e := &record.SessionEnded{IsError: &isErr, Subtype: &status}
	if v.Error != nil {
		typ := v.Error.Type
		e.TerminalReason = &typ
		if m := apiStatus.FindStringSubmatch(v.Error.Message); m != nil {
			n, _ := strconv.Atoi(m[1])
			e.APIErrorStatus = &n
		}
	}
	if !isErr && strings.TrimSpace(r.final.String()) != "" {
		e.FinalAnswer = &record.FinalAnswer{Text: r.final.String()}
	}
	if s := v.Stats; s != nil {
		e.DurationMS = s.DurationMS
		e.Usage = &record.Usage{InputTokens: s.Input, OutputTokens: s.Output, CacheReadInputTokens: s.Cached}
		if len(s.Models) > 0 {
			e.ModelUsage = map[string]record.Usage{}
			for m, u := range s.Models {
				e.ModelUsage[m] = record.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadInputTokens: u.Cached}
			}
		}
	}
	r.terminal = e
	return []record.Event{e}
}

// CloseReason is the stream.closed reason the terminal record supports:
// completed, or error (an error record, or none at all).
func CloseReason(t *record.SessionEnded) string {
	if t == nil || t.IsError == nil || *t.IsError {
		return record.ReasonError
	}
	return record.ReasonCompleted
}
