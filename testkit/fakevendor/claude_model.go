package fakevendor

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The fake claude's `model` directive: a session with a real Messages API
// server (conformance/scripted, usually through a run's loopback proxy),
// the way Claude Code holds one, so that what the run reads on the wire
// and what the fake prints agree, and a run's checks of the one against
// the other (H13) hold as they do for the real client. Each request
// streams (Claude Code always does); each answer's blocks are printed one
// line each under the wire's message id and model; each tool use is put
// to the hook and performed (call), and its result goes back in the next
// request; the session ends at the first answer that asks for no tool.
// A failed exchange ends the script the way Claude Code ends (the
// synthetic line and an error result, exit 1).

// maxModelRequests bounds a session, so that a script that keeps calling
// tools still ends.
const maxModelRequests = 100

// anthropicVersion is the API version header Claude Code sends.
const anthropicVersion = "2023-06-01"

// converse holds the session, prompt its first user turn. ended: the
// session failed and the script ends with code.
func (c *claude) converse(prompt string) (code int, ended bool) {
	m, err := c.dialModel()
	if err != nil {
		return c.apiError(err.Error()), true
	}
	msgs := []any{map[string]any{"role": "user", "content": prompt}}
	tools := make([]any, 0, len(c.tools))
	for _, t := range c.tools {
		tools = append(tools, map[string]any{"name": t, "description": t, "input_schema": map[string]any{"type": "object"}})
	}
	for range maxModelRequests {
		resp, err := m.send(c.l.model, msgs, tools)
		if err != nil {
			return c.apiError(err.Error()), true
		}
		c.turns++
		var results []any
		for _, b := range resp.Content {
			block := map[string]any{"type": b.Type}
			switch b.Type {
			case "text":
				block["text"] = b.Text
				c.final = b.Text
			case "tool_use":
				block["id"], block["name"], block["input"] = b.ID, b.Name, b.input()
			default:
				continue // thinking and the like: the fake prints only what it can stand behind
			}
			c.assistantLine(resp.ID, resp.Model, resp.Usage, block)
		}
		for _, b := range resp.Content {
			if b.Type != "tool_use" {
				continue
			}
			text, isErr := c.call(b.ID, b.Name, b.input())
			c.toolResult(b.ID, text, isErr)
			results = append(results, map[string]any{"type": "tool_result", "tool_use_id": b.ID, "content": text, "is_error": isErr})
		}
		if len(results) == 0 {
			return 0, false
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": resp.Content},
			map[string]any{"role": "user", "content": results})
	}
	return c.apiError(fmt.Sprintf("the fake claude stopped after %d model requests", maxModelRequests)), true
}

// apiError prints what Claude Code prints when an exchange fails
// (docs/wire-facts.md A3): its own synthetic assistant line, then an
// error result; it returns the exit status.
func (c *claude) apiError(text string) int {
	c.emit(map[string]any{"type": "assistant", "error": "server_error", "message": map[string]any{
		"id": "fake-synthetic-" + fmt.Sprint(c.turns), "role": "assistant", "model": "<synthetic>", "type": "message",
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "stop_sequence",
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0}, "is_api_error_message": true,
	}})
	c.emit(map[string]any{"type": "result", "subtype": "success", "is_error": true, "result": text,
		"num_turns": c.turns, "terminal_reason": "api_error", "permission_denials": []any{}})
	return 1
}

// modelClient is where the session's requests go and what they carry.
type modelClient struct {
	http    *http.Client
	url     string
	headers http.Header
}

// dialModel reads the model's address and credential the way Claude Code
// does: ANTHROPIC_BASE_URL (and ANTHROPIC_UNIX_SOCKET), the key from
// ANTHROPIC_AUTH_TOKEN (bearer), ANTHROPIC_API_KEY or the settings'
// apiKeyHelper, and ANTHROPIC_CUSTOM_HEADERS. Only a loopback address is
// dialled: no test sends a packet off the host.
func (c *claude) dialModel() (*modelClient, error) {
	base := os.Getenv("ANTHROPIC_BASE_URL")
	u, err := url.Parse(base)
	if base == "" || err != nil || !loopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("API Error: ANTHROPIC_BASE_URL %q is not a loopback address, and the fake claude dials no other", base)
	}
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	if sock := os.Getenv("ANTHROPIC_UNIX_SOCKET"); sock != "" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}
	}
	m := &modelClient{http: &http.Client{Transport: tr, Timeout: 2 * time.Minute},
		url: strings.TrimSuffix(base, "/") + "/v1/messages?beta=true", headers: http.Header{}}
	m.headers.Set("Content-Type", "application/json")
	m.headers.Set("Anthropic-Version", anthropicVersion)
	for _, line := range strings.Split(os.Getenv("ANTHROPIC_CUSTOM_HEADERS"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m.headers.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	switch token, key := os.Getenv("ANTHROPIC_AUTH_TOKEN"), os.Getenv("ANTHROPIC_API_KEY"); {
	case token != "":
		m.headers.Set("Authorization", "Bearer "+token)
	case key != "":
		m.headers.Set("X-Api-Key", key)
	default:
		s, err := c.settings()
		if err != nil {
			return nil, err
		}
		if s.APIKeyHelper == "" {
			return nil, errors.New("Not logged in · Please run /login")
		}
		out, err := exec.Command("/bin/sh", "-c", s.APIKeyHelper).Output()
		if err != nil {
			return nil, fmt.Errorf("apiKeyHelper failed: %v", err)
		}
		m.headers.Set("X-Api-Key", strings.TrimSpace(string(out)))
	}
	return m, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// message is one answer, put together from its stream.
type message struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content []*messageBlock `json:"content"`
	Usage   map[string]any  `json:"usage"`
	Stop    string          `json:"stop_reason"`
}

type messageBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	partial strings.Builder // input_json_delta, gathered
}

// input is the tool use's input, an empty object when the model sent none.
func (b *messageBlock) input() json.RawMessage {
	if len(b.Input) == 0 {
		return json.RawMessage("{}")
	}
	return b.Input
}

// send makes one streamed request and reads its answer whole.
func (m *modelClient) send(model string, msgs, tools []any) (*message, error) {
	body, err := json.Marshal(map[string]any{"model": cmp.Or(model, "claude-fake"), "max_tokens": 4096,
		"stream": true, "messages": msgs, "tools": tools})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = m.headers.Clone()
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("API Error: Connection error (%v)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("API Error: %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return readStream(resp.Body)
}

// readStream puts a Messages API event stream together: message_start's
// message, each block from its start and deltas, message_delta's stop
// reason and usage, up to message_stop.
func readStream(r io.Reader) (*message, error) {
	var msg *message
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:")); ok {
			var ev struct {
				Type    string          `json:"type"`
				Index   int             `json:"index"`
				Message *message        `json:"message"`
				Block   *messageBlock   `json:"content_block"`
				Delta   json.RawMessage `json:"delta"`
				Usage   map[string]any  `json:"usage"`
				Error   json.RawMessage `json:"error"`
			}
			if json.Unmarshal(bytes.TrimSpace(data), &ev) != nil {
				return nil, errors.New("API Error: API returned an empty or malformed response (HTTP 200)")
			}
			var block *messageBlock
			if msg != nil && ev.Index >= 0 && ev.Index < len(msg.Content) {
				block = msg.Content[ev.Index]
			}
			switch {
			case ev.Type == "message_start" && ev.Message != nil:
				msg = ev.Message
				msg.Content = nil
				if msg.Usage == nil {
					msg.Usage = map[string]any{}
				}
			case ev.Type == "content_block_start" && msg != nil && ev.Block != nil && ev.Index == len(msg.Content):
				if ev.Block.Type == "tool_use" {
					ev.Block.Input = nil // the deltas carry it
				}
				msg.Content = append(msg.Content, ev.Block)
			case ev.Type == "content_block_delta" && block != nil:
				var d struct {
					Type        string `json:"type"`
					Text        string `json:"text"`
					PartialJSON string `json:"partial_json"`
				}
				_ = json.Unmarshal(ev.Delta, &d)
				switch d.Type {
				case "text_delta":
					block.Text += d.Text
				case "input_json_delta":
					block.partial.WriteString(d.PartialJSON)
				}
			case ev.Type == "content_block_stop" && block != nil:
				if block.Type == "tool_use" && block.partial.Len() > 0 {
					if !json.Valid([]byte(block.partial.String())) {
						return nil, errors.New("API Error: the model's tool input is not JSON")
					}
					block.Input = json.RawMessage(block.partial.String())
				}
			case ev.Type == "message_delta" && msg != nil:
				var d struct {
					Stop string `json:"stop_reason"`
				}
				_ = json.Unmarshal(ev.Delta, &d)
				msg.Stop = d.Stop
				for k, v := range ev.Usage {
					msg.Usage[k] = v
				}
			case ev.Type == "message_stop" && msg != nil:
				return msg, nil
			case ev.Type == "error":
				return nil, fmt.Errorf("API Error: %s", ev.Error)
			}
		}
		if err != nil {
			return nil, errors.New("API Error: Connection lost mid-response. The response above may be incomplete.")
		}
	}
}
