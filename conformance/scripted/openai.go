package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// openAI speaks the Responses API: POST …/responses, answered as the SSE
// sequence response.created, per output item response.output_item.done
// (a message preceded by response.output_item.added and one
// response.output_text.delta), then response.completed.
type openAI struct{}

// liteHeader marks a request from a codex responses-lite slug, whose tools
// travel in an additional_tools input item instead of the tools field.
const liteHeader = "X-Openai-Internal-Codex-Responses-Lite"

func (openAI) isModelRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses")
}

type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

// toolNames flattens a tools list: a namespace's tools as <namespace>__<name>,
// a tool with no name (web_search) as its type.
func toolNames(tools []responsesTool) []string {
	var out []string
	for _, t := range tools {
		switch {
		case t.Type == "namespace":
			for _, inner := range t.Tools {
				out = append(out, t.Name+"__"+inner.Name)
			}
		case t.Name != "":
			out = append(out, t.Name)
		default:
			out = append(out, t.Type)
		}
	}
	return out
}

type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
	Tools   []responsesTool `json:"tools"`
}

func (openAI) parse(body []byte, req *Request) {
	var b struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  []inputItem     `json:"input"`
		Tools  []responsesTool `json:"tools"`
	}
	req.Lite = strings.EqualFold(req.Header.Get(liteHeader), "true")
	if json.Unmarshal(body, &b) != nil {
		return
	}
	req.Model, req.Stream = b.Model, b.Stream
	req.Tools = toolNames(b.Tools)
	for _, it := range b.Input {
		switch {
		case it.Type == "additional_tools":
			req.Tools = append(req.Tools, toolNames(it.Tools)...)
		case it.Role == "user" && (it.Type == "message" || it.Type == ""):
			if t := inputText(it.Content); t != "" {
				req.UserTexts = append(req.UserTexts, t)
			}
		}
	}
	// The tool outputs that close the conversation, in order.
	for i := len(b.Input) - 1; i >= 0; i-- {
		it := b.Input[i]
		if !strings.HasSuffix(it.Type, "call_output") {
			break
		}
		req.ToolResults = append(req.ToolResults, ToolResult{CallID: it.CallID, Content: textOf(it.Output)})
	}
	slices.Reverse(req.ToolResults)
}

// inputText is a message's text: a string, or its input_text parts joined by
// newlines.
func inputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		if p.Type == "input_text" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// items is the turn as Responses output items, text first.
func (openAI) items(t Turn, id int) []map[string]any {
	var out []map[string]any
	if t.Text != "" {
		out = append(out, map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%04d", id), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}},
		})
	}
	if c := t.ToolCall; c != nil {
		item := map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%04d", id), "call_id": fmt.Sprintf("call_%04d", id),
			"name": c.Name, "arguments": c.input(), "status": "completed",
		}
		if c.Freeform != "" {
			item = map[string]any{
				"type": "custom_tool_call", "id": fmt.Sprintf("ctc_%04d", id), "call_id": fmt.Sprintf("call_%04d", id),
				"name": c.Name, "input": c.Freeform, "status": "completed",
			}
		}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		out = append(out, item)
	}
	return out
}

func (o openAI) answer(w http.ResponseWriter, req *Request, t Turn, id int, hold func() bool) {
	model := req.Model
	if model == "" {
		model = "scripted"
	}
	items := o.items(t, id)
	response := func(status string, output any) map[string]any {
		r := map[string]any{"id": fmt.Sprintf("resp_%04d", id), "object": "response", "status": status, "model": model, "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{
				"input_tokens": 1, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 2,
			}
		}
		return r
	}
	if !req.Stream {
		if hold() {
			writeJSON(w, http.StatusOK, response("completed", items))
		}
		return
	}
	s := startSSE(w)
	seq := 0
	event := func(name string, payload map[string]any) {
		payload["type"], payload["sequence_number"] = name, seq
		seq++
		s.event(name, payload)
	}
	event("response.created", map[string]any{"response": response("in_progress", []any{})})
	if !hold() {
		return
	}
	for i, item := range items {
		if item["type"] == "message" {
			// Streamed text: codex turns the delta into item/agentMessage/delta.
			event("response.output_item.added", map[string]any{"output_index": i, "item": started(item)})
			event("response.output_text.delta", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "delta": t.Text})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	event("response.completed", map[string]any{"response": response("completed", items)})
}

// started is a message as response.output_item.added announces it: in
// progress, with no content yet.
func started(item map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range item {
		out[k] = v
	}
	out["status"], out["content"] = "in_progress", []any{}
	return out
}

func (openAI) fail(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"type": typ, "message": message, "code": typ, "param": nil}})
}
