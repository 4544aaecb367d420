package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic speaks the Messages API: POST …/v1/messages (Claude Code adds
// ?beta=true), answered as the SSE sequence message_start, per block
// content_block_start/delta/stop, message_delta, message_stop.
type anthropic struct{}

func (anthropic) isModelRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages")
}

func (anthropic) parse(body []byte, req *Request) {
	var b struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &b) != nil {
		return
	}
	req.Model, req.Stream = b.Model, b.Stream
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range b.Messages {
		if m.Role == "user" {
			if t := textOf(m.Content); strings.TrimSpace(t) != "" {
				req.UserTexts = append(req.UserTexts, t)
			}
		}
	}
	if len(b.Messages) == 0 {
		return
	}
	last := b.Messages[len(b.Messages)-1]
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if last.Role != "user" || json.Unmarshal(last.Content, &blocks) != nil {
		return
	}
	for _, bl := range blocks {
		if bl.Type == "tool_result" {
			req.ToolResults = append(req.ToolResults, ToolResult{CallID: bl.ToolUseID, Content: textOf(bl.Content), IsError: bl.IsError})
		}
	}
}

// blocks is the turn as Messages content blocks, text first.
func (anthropic) blocks(t Turn, id int) []map[string]any {
	var out []map[string]any
	if t.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": t.Text})
	}
	if c := t.ToolCall; c != nil {
		out = append(out, map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%04d", id), "name": c.Name,
			"input": json.RawMessage(c.input()),
		})
	}
	return out
}

func (a anthropic) answer(w http.ResponseWriter, req *Request, t Turn, id int, hold func() bool) {
	model := req.Model
	if model == "" {
		model = "scripted"
	}
	stop := "end_turn"
	if t.ToolCall != nil {
		stop = "tool_use"
	}
	blocks := a.blocks(t, id)
	msgID := fmt.Sprintf("msg_%04d", id)
	usage := map[string]any{"input_tokens": 1, "output_tokens": 1}
	if !req.Stream {
		if !hold() {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	s := startSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	if !hold() {
		return
	}
	for i, b := range blocks {
		start := map[string]any{"type": b["type"]}
		var delta map[string]any
		if b["type"] == "text" {
			start["text"] = ""
			delta = map[string]any{"type": "text_delta", "text": b["text"]}
		} else {
			start["id"], start["name"], start["input"] = b["id"], b["name"], map[string]any{}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}
		}
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

func (anthropic) fail(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}
