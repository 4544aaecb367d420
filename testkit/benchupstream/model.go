package benchupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The model streams: one turn as each API streams it, a token or two per
// text delta, then a tool call whose input arrives in many small chunks.
// A turn has TurnDeltas text deltas (about what a short answer is); a
// long one LongDeltas, for throughput.
const (
	AnthropicTurn = "/sse/anthropic"
	AnthropicLong = "/sse/anthropic-long"
	OpenAITurn    = "/sse/openai"
	OpenAILong    = "/sse/openai-long"

	TurnDeltas = 300
	LongDeltas = 20000
)

// perWrite is how many events go out in one write and flush after the
// first: the API's tokens arrive a few to a packet.
const perWrite = 8

var words = []string{"The", " proxy", " reads", " each", " chunk", " after", " it", " is", " flushed", ",", " so",
	" the", " client", "'s", " \"view\"", " is", " never", " held", " up", ";", "\n", " ünï", "code", " 😀", "."}

func event(name string, data any) []byte {
	b, _ := json.Marshal(data)
	return []byte("event: " + name + "\ndata: " + string(b) + "\n\n")
}

// anthropicEvents is a Messages API turn: a thinking block, a text of n
// deltas, a tool_use whose input comes in 40 input_json_delta chunks.
func anthropicEvents(n int) [][]byte {
	type m = map[string]any
	out := [][]byte{event("message_start", m{"type": "message_start", "message": m{"id": "msg_01bench", "type": "message",
		"role": "assistant", "model": "claude-opus-5-5", "content": []any{}, "stop_reason": nil, "usage": m{"input_tokens": 900, "output_tokens": 1}}})}
	// Deltas in the API's own key order (a map would sort the keys).
	delta := func(i int, d m) []byte {
		var kind, field string
		for k, v := range d {
			if k == "type" {
				kind = v.(string)
			} else {
				q, _ := json.Marshal(v)
				field = fmt.Sprintf("%q:%s", k, q)
			}
		}
		return fmt.Appendf(nil, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":%q,%s}}\n\n", i, kind, field)
	}
	out = append(out, event("content_block_start", m{"type": "content_block_start", "index": 0, "content_block": m{"type": "thinking", "thinking": ""}}))
	for i := range 20 {
		out = append(out, delta(0, m{"type": "thinking_delta", "thinking": words[i%len(words)]}))
	}
	out = append(out, delta(0, m{"type": "signature_delta", "signature": strings.Repeat("EqQBCgIYAhIM", 20)}),
		event("content_block_stop", m{"type": "content_block_stop", "index": 0}),
		event("content_block_start", m{"type": "content_block_start", "index": 1, "content_block": m{"type": "text", "text": ""}}))
	for i := range n {
		out = append(out, delta(1, m{"type": "text_delta", "text": words[i%len(words)]}))
	}
	out = append(out, event("content_block_stop", m{"type": "content_block_stop", "index": 1}),
		event("content_block_start", m{"type": "content_block_start", "index": 2, "content_block": m{"type": "tool_use",
			"id": "toolu_01bench", "name": "mcp__metaharness__read_file", "input": m{}}}))
	for _, c := range toolInputChunks() {
		out = append(out, delta(2, m{"type": "input_json_delta", "partial_json": c}))
	}
	return append(out, event("content_block_stop", m{"type": "content_block_stop", "index": 2}),
		event("message_delta", m{"type": "message_delta", "delta": m{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": m{"output_tokens": n}}),
		event("message_stop", m{"type": "message_stop"}))
}

// toolInputChunks is a tool input of about 1 KiB cut into 40 pieces.
func toolInputChunks() []string {
	input := fmt.Sprintf(`{"path": "src/notes.txt", "max_bytes": 65536, "text": %q}`, strings.Repeat("a line of the file\n", 48))
	var out []string
	step := len(input)/40 + 1
	for i := 0; i < len(input); i += step {
		out = append(out, input[i:min(i+step, len(input))])
	}
	return out
}

// openAIEvents is a Responses API turn as codex's provider streams it: a
// reasoning item, a message of n output_text deltas, a function call whose
// arguments come in 40 deltas, each item repeated whole when done, and
// response.completed repeating the whole output.
func openAIEvents(n int) [][]byte {
	type m = map[string]any
	seq := 0
	ev := func(name string, d m) []byte {
		d["type"], d["sequence_number"] = name, seq
		seq++
		return event(name, d)
	}
	resp := func(status string, output []any) m {
		return m{"id": "resp_bench", "object": "response", "status": status, "model": "gpt-5.5", "output": output}
	}
	reasoning := m{"id": "rs_bench", "type": "reasoning", "summary": []any{}, "encrypted_content": strings.Repeat("gAAAAABor0A0", 100)}
	out := [][]byte{ev("response.created", m{"response": resp("in_progress", []any{})}),
		ev("response.in_progress", m{"response": resp("in_progress", []any{})}),
		ev("response.output_item.added", m{"output_index": 0, "item": m{"id": "rs_bench", "type": "reasoning"}}),
		ev("response.output_item.done", m{"output_index": 0, "item": reasoning}),
		ev("response.output_item.added", m{"output_index": 1, "item": m{"id": "msg_bench", "type": "message", "status": "in_progress", "content": []any{}, "role": "assistant"}})}
	var text strings.Builder
	for i := range n {
		w := words[i%len(words)]
		text.WriteString(w)
		out = append(out, ev("response.output_text.delta", m{"item_id": "msg_bench", "output_index": 1, "content_index": 0, "delta": w, "logprobs": []any{}}))
	}
	msg := m{"id": "msg_bench", "type": "message", "status": "completed", "role": "assistant",
		"content": []any{m{"type": "output_text", "annotations": []any{}, "text": text.String()}}}
	out = append(out, ev("response.output_text.done", m{"item_id": "msg_bench", "output_index": 1, "content_index": 0, "text": text.String()}),
		ev("response.output_item.done", m{"output_index": 1, "item": msg}))
	args := strings.Join(toolInputChunks(), "")
	for _, c := range toolInputChunks() {
		out = append(out, ev("response.function_call_arguments.delta", m{"item_id": "fc_bench", "output_index": 2, "delta": c}))
	}
	fc := m{"id": "fc_bench", "type": "function_call", "status": "completed", "call_id": "call_bench", "name": "read_file",
		"namespace": "mcp__metaharness", "arguments": args}
	return append(out, ev("response.function_call_arguments.done", m{"item_id": "fc_bench", "output_index": 2, "arguments": args}),
		ev("response.output_item.done", m{"output_index": 2, "item": fc}),
		ev("response.completed", m{"response": resp("completed", []any{reasoning, msg, fc})}))
}

// streamHandler writes events: the first at once, the rest perWrite to a
// write, each write flushed.
func streamHandler(events [][]byte) http.HandlerFunc {
	var writes [][]byte
	for i := 1; i < len(events); i += perWrite {
		var b []byte
		for _, e := range events[i:min(i+perWrite, len(events))] {
			b = append(b, e...)
		}
		writes = append(writes, b)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		_, _ = w.Write(events[0])
		f.Flush()
		for _, b := range writes {
			if _, err := w.Write(b); err != nil {
				return
			}
			f.Flush()
		}
	}
}
