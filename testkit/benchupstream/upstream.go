// Package benchupstream is the upstream the loopback benchmarks measure against:
// /small answers a short JSON body, /sse one event at once and a second
// after the first has gone out, /big BigSize bytes in 32 KiB writes, and
// /sse/… a model turn as each API streams it (model.go).
package benchupstream

import (
	"bytes"
	"io"
	"net/http"
)

// BigSize is the length of /big's answer.
const BigSize = 10 << 20

// Handler serves the three paths.
func Handler() http.Handler {
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	mux := http.NewServeMux()
	mux.HandleFunc(AnthropicTurn, streamHandler(anthropicEvents(TurnDeltas)))
	mux.HandleFunc(AnthropicLong, streamHandler(anthropicEvents(LongDeltas)))
	mux.HandleFunc(OpenAITurn, streamHandler(openAIEvents(TurnDeltas)))
	mux.HandleFunc(OpenAILong, streamHandler(openAIEvents(LongDeltas)))
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","content":[{"type":"text","text":"ok"}]}`)
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, "event: message_stop\ndata: {}\n\n")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		w.Header().Set("Content-Type", "application/octet-stream")
		for sent := 0; sent < BigSize; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	return mux
}

func drain(r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }
