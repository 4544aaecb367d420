package codex

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// RecordFormat names the run's transcript of a codex session for project
// --from: the JSON-RPC conversation with app-server, both directions, one
// message per line as it crossed the pipe.
const RecordFormat = "codex-app-server"

// Warning codes for what codex says beside its items.
const (
	// WarnVendorWarning: a configWarning, warning or deprecationNotice.
	WarnVendorWarning = "VENDOR_WARNING"
	// WarnVendorAPIRetry: an error notification codex will retry after.
	WarnVendorAPIRetry = "VENDOR_API_RETRY"
	// WarnVendorError: an error notification it will not retry, or an
	// error answer to a request of the run.
	WarnVendorError = "VENDOR_ERROR"
)

// Codex's tool names for the native calls it asks approval for; the
// rendering table (capabilities) names the same.
const (
	ShellTool = "exec_command"
	PatchTool = "apply_patch"
)

// message is one JSON-RPC line, either direction.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
	// EmittedAtMs is the Unix time codex stamps on its notifications.
	EmittedAtMs *int64 `json:"emittedAtMs,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// clientID reports whether id is one the run chose: a JSON string. The
// run's requests carry string ids and app-server's integer ids, so every
// line of the transcript says which way it went.
func clientID(id json.RawMessage) bool { return len(id) > 0 && id[0] == '"' }

// Reader maps the transcript of a codex session, both directions, to
// events. It reads no clock: an event's "at" is codex's emittedAtMs, or
// absent. The run's own requests are remembered so that their answers can
// be read: session.started is made of the answers to thread/start,
// config/read, plugin/installed, mcpServerStatus/list and skills/list, and
// comes out when the run sends the task (turn/start).
//
// Calls come out as record.ToolRequested with seam none when codex's items
// show them (item/started); deciding them is the session's, at its own
// seam. Turns come out as record.TurnStarted and record.TurnEnded, for the
// session to hand to the engine. Deltas, status changes and the answers the
// run does not read are folded into the items they belong to (the
// transcript keeps them); any other message of codex is opaque.
type Reader struct {
	line     uint64
	sent     map[string]string // the run's request ids → method
	started  *record.SessionStarted
	opened   bool
	model    *string
	threadID string
	// offered are the dynamic tools the run declared at thread/start: with
	// the catalog override and the config's switches, exactly what the
	// model is offered. Nil without a catalogue (codex's own tools).
	offered []string

	turn     uint32
	turnIDs  []string
	inputs   map[string]json.RawMessage // call id → the input its tool.requested showed
	names    map[string]string          // call id → tool name
	lastText map[string]*record.FinalAnswer
	usage    *record.Usage
	duration uint64
	terminal *record.SessionEnded
}

type turnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

// NewReader is a reader at the start of a transcript.
func NewReader() *Reader {
	return &Reader{sent: map[string]string{}, inputs: map[string]json.RawMessage{}, names: map[string]string{}, lastText: map[string]*record.FinalAnswer{}}
}

// Terminal is the session.ended the transcript produced: the last turn's
// end, nil when no turn ended.
func (r *Reader) Terminal() *record.SessionEnded { return r.terminal }

// Input is the input a call's tool.requested showed, and its tool name, for
// a seam that presents the same call (an approval names only the item).
func (r *Reader) Input(callID string) (string, json.RawMessage, bool) {
	in, ok := r.inputs[callID]
	return r.names[callID], in, ok
}

// ThreadID is the thread app-server started, "" before.
func (r *Reader) ThreadID() string { return r.threadID }

// Read maps one transcript line.
func (r *Reader) Read(raw []byte) []kind.Item {
	r.line++
	raw = bytes.TrimRight(raw, "\r\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var m message
	if err := jsonscan.Unmarshal(raw, &m); err != nil {
		return []kind.Item{{Event: r.opaque(raw, nil, nil)}}
	}
	at := ""
	if m.EmittedAtMs != nil {
		at = time.UnixMilli(*m.EmittedAtMs).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	var out []record.Event
	switch {
	case m.Method != "" && clientID(m.ID):
		out = r.request(&m)
	case m.Method != "" && len(m.ID) > 0:
		out = r.serverRequest(&m)
	case m.Method == "initialized":
		return nil // the run's one notification
	case m.Method != "":
		out = r.notification(raw, &m)
	case clientID(m.ID):
		out = r.answer(&m)
	default:
		// The run's answer to a server request: the decision is in the
		// stream already, from the seam that made it.
		return nil
	}
	items := make([]kind.Item, len(out))
	for i, e := range out {
		items[i] = kind.Item{At: at, Event: e}
	}
	return items
}

func (r *Reader) opaque(raw []byte, typ, subtype *string) *record.Opaque {
	sum := sha256.Sum256(raw)
	line := r.line
	return &record.Opaque{VendorType: typ, VendorSubtype: subtype, Digest: hex.EncodeToString(sum[:]), SourceLine: &line}
}

// request is a request of the run's: remembered; thread/start names the
// tools the model is offered, turn/start opens the session.
func (r *Reader) request(m *message) []record.Event {
	r.sent[string(m.ID)] = m.Method
	if m.Method == "thread/start" {
		var p struct {
			DynamicTools []struct {
				Name string `json:"name"`
			} `json:"dynamicTools"`
		}
		if jsonscan.Unmarshal(m.Params, &p) == nil && len(p.DynamicTools) > 0 {
			r.offered = []string{}
			for _, t := range p.DynamicTools {
				r.offered = append(r.offered, t.Name)
			}
		}
	}
	if m.Method != "turn/start" || r.opened || r.started == nil {
		return nil
	}
	r.opened = true
	return []record.Event{r.started}
}

// serverRequest is app-server asking the run: the seam that answers it
// records the decision. Nothing here.
func (r *Reader) serverRequest(*message) []record.Event { return nil }

// answer is app-server answering a request of the run's.
func (r *Reader) answer(m *message) []record.Event {
	method := r.sent[string(m.ID)]
	delete(r.sent, string(m.ID))
	if m.Error != nil {
		switch method {
		case "turn/steer", "turn/interrupt":
			return nil // the command's result says it
		}
		return []record.Event{&record.Warning{Code: WarnVendorError, Message: fmt.Sprintf("codex answered %s with error %d: %s", method, m.Error.Code, m.Error.Message)}}
	}
	switch method {
	case "thread/start":
		r.threadStarted(m.Result)
	case "config/read":
		r.configRead(m.Result)
	case "plugin/installed":
		r.pluginsInstalled(m.Result)
	case "mcpServerStatus/list":
		r.mcpServers(m.Result)
	case "skills/list":
		r.skills(m.Result)
	}
	return nil
}

func (r *Reader) threadStarted(result json.RawMessage) {
	var v struct {
		Thread struct {
			ID         string  `json:"id"`
			SessionID  *string `json:"sessionId"`
			CLIVersion *string `json:"cliVersion"`
			Cwd        *string `json:"cwd"`
		} `json:"thread"`
		Model          *string         `json:"model"`
		ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
		Sandbox        struct {
			Type string `json:"type"`
		} `json:"sandbox"`
	}
	if jsonscan.Unmarshal(result, &v) != nil {
		return
	}
	r.threadID, r.model = v.Thread.ID, v.Model
	var approval string
	_ = jsonscan.Unmarshal(v.ApprovalPolicy, &approval)
	mode := fmt.Sprintf("approval %s, sandbox %s", approval, v.Sandbox.Type)
	r.started = &record.SessionStarted{
		Adapter: "codex", AdapterClass: "harness",
		HarnessVersion: v.Thread.CLIVersion, SessionID: v.Thread.SessionID, Model: v.Model,
		PermissionMode: &mode, Cwd: v.Thread.Cwd, OfferedTools: r.offered,
	}
}

// configRead takes the credential source (the thread's provider's env_key,
// or "none") and the output style (the personality) from the effective
// config.
func (r *Reader) configRead(result json.RawMessage) {
	var v struct {
		Config struct {
			ModelProvider  string  `json:"model_provider"`
			Personality    *string `json:"personality"`
			ModelProviders map[string]struct {
				EnvKey *string `json:"env_key"`
			} `json:"model_providers"`
		} `json:"config"`
	}
	if jsonscan.Unmarshal(result, &v) != nil || r.started == nil {
		return
	}
	src := "none"
	if p, ok := v.Config.ModelProviders[v.Config.ModelProvider]; ok && p.EnvKey != nil && *p.EnvKey != "" {
		src = *p.EnvKey
	}
	style := "default"
	if v.Config.Personality != nil && *v.Config.Personality != "" {
		style = *v.Config.Personality
	}
	r.started.CredentialSource, r.started.OutputStyle = &src, &style
}

func (r *Reader) pluginsInstalled(result json.RawMessage) {
	var v struct {
		Marketplaces []struct {
			Name    string `json:"name"`
			Plugins []struct {
				Name    string  `json:"name"`
				Version *string `json:"version"`
			} `json:"plugins"`
		} `json:"marketplaces"`
	}
	if jsonscan.Unmarshal(result, &v) != nil || r.started == nil {
		return
	}
	r.started.Plugins = []record.Plugin{}
	for _, mp := range v.Marketplaces {
		src := mp.Name
		for _, p := range mp.Plugins {
			r.started.Plugins = append(r.started.Plugins, record.Plugin{Name: p.Name, Source: &src, Version: p.Version})
		}
	}
}

func (r *Reader) mcpServers(result json.RawMessage) {
	var v struct {
		Data []struct {
			Name   string  `json:"name"`
			Status *string `json:"status"`
		} `json:"data"`
	}
	if jsonscan.Unmarshal(result, &v) != nil || r.started == nil {
		return
	}
	r.started.MCPServers = []record.MCPServer{}
	for _, s := range v.Data {
		r.started.MCPServers = append(r.started.MCPServers, record.MCPServer{Name: s.Name, Status: s.Status})
	}
}

func (r *Reader) skills(result json.RawMessage) {
	var v struct {
		Data []struct {
			Skills []struct {
				Name string `json:"name"`
			} `json:"skills"`
		} `json:"data"`
	}
	if jsonscan.Unmarshal(result, &v) != nil || r.started == nil {
		return
	}
	r.started.Skills = []string{}
	for _, d := range v.Data {
		for _, s := range d.Skills {
			r.started.Skills = append(r.started.Skills, s.Name)
		}
	}
}

// folded are notifications read into other events (or carrying nothing a
// stream needs); the transcript keeps them.
var folded = map[string]bool{
	"thread/started": true, "thread/status/changed": true, "serverRequest/resolved": true,
	"item/agentMessage/delta": true, "item/reasoning/textDelta": true, "item/reasoning/summaryTextDelta": true,
	"item/reasoning/summaryPartAdded": true, "item/commandExecution/outputDelta": true, "item/fileChange/outputDelta": true,
	"item/fileChange/patchUpdated": true, "account/rateLimits/updated": true, "mcpServer/startupStatus/updated": true,
	"remoteControl/status/changed": true, "turn/diff/updated": true, "turn/plan/updated": true,
	"thread/settings/updated": true, "skills/changed": true,
}

func (r *Reader) notification(raw []byte, m *message) []record.Event {
	switch m.Method {
	case "turn/started":
		r.turn++
		var v struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		_ = jsonscan.Unmarshal(m.Params, &v)
		r.turnIDs = append(r.turnIDs, v.Turn.ID)
		return []record.Event{&record.TurnStarted{Turn: r.turn}}
	case "turn/completed":
		return r.turnCompleted(m.Params)
	case "item/started":
		return r.itemStarted(m.Params)
	case "item/completed":
		return r.itemCompleted(m.Params)
	case "thread/tokenUsage/updated":
		return r.tokenUsage(m.Params)
	case "error":
		var v struct {
			Error     turnError `json:"error"`
			WillRetry bool      `json:"willRetry"`
		}
		_ = jsonscan.Unmarshal(m.Params, &v)
		code := WarnVendorError
		if v.WillRetry {
			code = WarnVendorAPIRetry
		}
		return []record.Event{&record.Warning{Code: code, Message: "codex: " + v.Error.Message}}
	case "configWarning", "warning", "deprecationNotice":
		var v struct {
			Summary *string `json:"summary"`
			Message *string `json:"message"`
		}
		_ = jsonscan.Unmarshal(m.Params, &v)
		text := string(m.Params)
		switch {
		case v.Summary != nil:
			text = *v.Summary
		case v.Message != nil:
			text = *v.Message
		}
		return []record.Event{&record.Warning{Code: WarnVendorWarning, Message: "codex " + m.Method + ": " + text}}
	}
	if folded[m.Method] {
		return nil
	}
	method := m.Method
	return []record.Event{r.opaque(raw, &method, nil)}
}

// item is the part of a ThreadItem the reader maps.
type item struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	ContentItems     []contentItem   `json:"contentItems"`
	Success          *bool           `json:"success"`
	Status           string          `json:"status"`
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	Changes          []fileChange    `json:"changes"`
	Text             string          `json:"text"`
	Phase            *string         `json:"phase"`
	Summary          []string        `json:"summary"`
	Content          []string        `json:"content"`
}

type contentItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type fileChange struct {
	Path string `json:"path"`
	Kind struct {
		Type string `json:"type"`
	} `json:"kind"`
}

// ShellInput is the input a native command call is presented with, from
// its item or its approval request alike.
func ShellInput(command, cwd string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"command": command, "cwd": cwd})
	return b
}

// patchInput is a file change's input: the paths and what becomes of each.
func patchInput(changes []fileChange) json.RawMessage {
	type change struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	}
	cs := make([]change, len(changes))
	for i, c := range changes {
		cs[i] = change{c.Path, c.Kind.Type}
	}
	b, _ := json.Marshal(map[string]any{"changes": cs})
	return b
}

func (r *Reader) itemStarted(params json.RawMessage) []record.Event {
	var v struct {
		Item item `json:"item"`
	}
	if jsonscan.Unmarshal(params, &v) != nil {
		return nil
	}
	it := v.Item
	// The seam is where the call is presented: the run's catalogue server
	// performs a dynamic tool, an approval request asks about a native one.
	var name, seam string
	var input json.RawMessage
	switch it.Type {
	case "dynamicToolCall":
		name, input, seam = it.Tool, it.Arguments, record.SeamOwnedTool
	case "commandExecution":
		name, input, seam = ShellTool, ShellInput(it.Command, it.Cwd), record.SeamControlRequest
	case "fileChange":
		name, input, seam = PatchTool, patchInput(it.Changes), record.SeamControlRequest
	default:
		return nil // its item/completed carries it
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	r.inputs[it.ID], r.names[it.ID] = input, name
	return []record.Event{&record.ToolRequested{CallID: it.ID, Name: name, Input: input, Seam: seam}}
}

func (r *Reader) itemCompleted(params json.RawMessage) []record.Event {
	var v struct {
		TurnID string `json:"turnId"`
		Item   item   `json:"item"`
	}
	if jsonscan.Unmarshal(params, &v) != nil {
		return nil
	}
	it := v.Item
	switch it.Type {
	case "agentMessage":
		fa := &record.FinalAnswer{Text: it.Text}
		if v.TurnID != "" {
			id := v.TurnID
			fa.TurnID = &id
		}
		if prev := r.lastText[v.TurnID]; prev == nil || it.Phase == nil || *it.Phase == "final_answer" || prev.Text == "" {
			r.lastText[v.TurnID] = fa
		}
		var id *string
		if it.ID != "" {
			id = &it.ID
		}
		return []record.Event{&record.Text{Text: it.Text, RequestID: id}}
	case "reasoning":
		text := strings.Join(append(append([]string{}, it.Summary...), it.Content...), "\n")
		if text == "" {
			return nil
		}
		return []record.Event{&record.Thinking{Text: text}}
	case "dynamicToolCall":
		var parts []string
		for _, c := range it.ContentItems {
			if c.Type == "inputText" {
				parts = append(parts, c.Text)
			}
		}
		text := strings.Join(parts, "\n")
		isErr := it.Success == nil || !*it.Success
		return []record.Event{toolResult(it.ID, text, &isErr, nil, it.Status)}
	case "commandExecution":
		text := ""
		if it.AggregatedOutput != nil {
			text = *it.AggregatedOutput
		}
		isErr := it.Status != "completed" || (it.ExitCode != nil && *it.ExitCode != 0)
		return []record.Event{toolResult(it.ID, text, &isErr, it.ExitCode, it.Status)}
	case "fileChange":
		isErr := it.Status != "completed"
		return []record.Event{toolResult(it.ID, "", &isErr, nil, it.Status)}
	}
	return nil
}

func toolResult(callID, text string, isErr *bool, exitCode *int, status string) *record.ToolResult {
	content, _ := json.Marshal(text)
	n := uint64(len(text))
	src := "codex item status " + status
	return &record.ToolResult{CallID: callID, Content: content, Bytes: &n, IsError: isErr, ExitCode: exitCode, OutcomeSource: &src, ToolUseResult: json.RawMessage("null")}
}

func (r *Reader) tokenUsage(params json.RawMessage) []record.Event {
	var v struct {
		TokenUsage struct {
			Total tokenCounts `json:"total"`
			Last  tokenCounts `json:"last"`
		} `json:"tokenUsage"`
	}
	if jsonscan.Unmarshal(params, &v) != nil {
		return nil
	}
	total := v.TokenUsage.Total.usage()
	r.usage = &total
	return []record.Event{&record.UsageEvent{Model: r.model, Usage: v.TokenUsage.Last.usage()}}
}

type tokenCounts struct {
	InputTokens           *uint64 `json:"inputTokens"`
	CachedInputTokens     *uint64 `json:"cachedInputTokens"`
	CacheWriteInputTokens *uint64 `json:"cacheWriteInputTokens"`
	OutputTokens          *uint64 `json:"outputTokens"`
	ReasoningOutputTokens *uint64 `json:"reasoningOutputTokens"`
}

func (c tokenCounts) usage() record.Usage {
	return record.Usage{InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CacheReadInputTokens: c.CachedInputTokens,
		CacheCreationInputTokens: c.CacheWriteInputTokens, ThinkingTokens: c.ReasoningOutputTokens}
}

func (r *Reader) turnCompleted(params json.RawMessage) []record.Event {
	var v struct {
		Turn struct {
			ID         string     `json:"id"`
			Status     string     `json:"status"`
			Error      *turnError `json:"error"`
			DurationMs *uint64    `json:"durationMs"`
		} `json:"turn"`
	}
	if jsonscan.Unmarshal(params, &v) != nil {
		return nil
	}
	t := v.Turn
	if t.DurationMs != nil {
		r.duration += *t.DurationMs
	}
	r.terminal = r.ended(t.ID, t.Status, t.Error)
	status := t.Status
	return []record.Event{&record.TurnEnded{Turn: r.turn, StopReason: &status}}
}

// ended is the session's terminal record as of a turn's end: every turn
// the run starts is its last unless the embedder adds another.
func (r *Reader) ended(turnID, status string, terr *turnError) *record.SessionEnded {
	isErr := status != "completed"
	turns := uint64(r.turn)
	e := &record.SessionEnded{
		IsError: &isErr, Subtype: &status, StopReason: &status, NumTurns: &turns,
		PermissionDenials: json.RawMessage("null"), Usage: r.usage,
	}
	if r.duration > 0 {
		d := r.duration
		e.DurationMS = &d
	}
	if fa := r.lastText[turnID]; fa != nil && !isErr && fa.Text != "" {
		e.FinalAnswer = fa
	}
	if terr != nil {
		msg := terr.Message
		e.TerminalReason = &msg
		e.APIErrorStatus = httpStatus(terr.CodexErrorInfo)
	}
	if r.model != nil {
		for i, id := range r.turnIDs {
			id := id
			e.ObservedModels = append(e.ObservedModels, record.ObservedModel{Turn: uint64(i + 1), TurnID: &id, Model: *r.model, Scope: "turn_selection"})
		}
	}
	return e
}

// httpStatus finds the HTTP status in codex's codexErrorInfo, which names
// the kind of failure as its one key: {"httpConnectionFailed":{"httpStatusCode":401}}.
func httpStatus(info json.RawMessage) *int {
	var v map[string]struct {
		HTTPStatusCode *int `json:"httpStatusCode"`
	}
	if jsonscan.Unmarshal(info, &v) != nil {
		return nil
	}
	for _, x := range v {
		if x.HTTPStatusCode != nil {
			return x.HTTPStatusCode
		}
	}
	return nil
}
