package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// openAI speaks the Responses API: POST …/responses, answered as the SSE
// sequence response.created, response.output_item.done per output item,
// response.completed.
type openAI struct{}

func (openAI) isModelRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses")
}

type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

func (openAI) parse(body []byte, req *Request) {
	var b struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []responsesTool   `json:"tools"`
	}
	if json.Unmarshal(body, &b) != nil {
		return
	}
	req.Model, req.Stream = b.Model, b.Stream
	for _, t := range b.Tools {
		switch {
		case t.Type == "namespace":
			for _, inner := range t.Tools {
				req.Tools = append(req.Tools, t.Name+"__"+inner.Name)
			}
		case t.Name != "":
			req.Tools = append(req.Tools, t.Name)
		default:
			req.Tools = append(req.Tools, t.Type)
		}
	}
	// The tool outputs that close the conversation, in order.
	for i := len(b.Input) - 1; i >= 0; i-- {
		var item struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(b.Input[i], &item) != nil || !strings.HasSuffix(item.Type, "call_output") {
			break
		}
		req.ToolResults = append(req.ToolResults, ToolResult{CallID: item.CallID, Content: textOf(item.Output)})
	}
	slices.Reverse(req.ToolResults)
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
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		out = append(out, item)
	}
	return out
}

func (o openAI) answer(w http.ResponseWriter, req *Request, t Turn, id int) {
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
		writeJSON(w, http.StatusOK, response("completed", items))
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
	for i, item := range items {
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	event("response.completed", map[string]any{"response": response("completed", items)})
}

func (openAI) fail(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"type": typ, "message": message, "code": typ, "param": nil}})
}
