// Package scripted holds the scripted model servers: a fake Anthropic
// Messages API, a fake OpenAI Responses API and a fake Gemini API, each
// answering from a short script and recording every request. The demo, `conformance --live` and
// every real-client test point the vendor CLIs at them (usually through the
// loopback proxy), so no test needs a model, a network or a credential.
//
// How a turn is chosen: every model request (POST …/v1/messages,
// POST …/responses or POST …:streamGenerateContent) consumes the next turn
// of the script, in order; a Gemini side call asking for JSON consumes none. A request
// past the end answers Script.Final as text ("done" when empty). Any other
// request (a probe, a models listing) answers 404 and consumes nothing; it is
// still recorded.
package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DefaultFinal is the text answered past the end of a script that names none.
const DefaultFinal = "done"

// Script is what a scripted server answers, one turn per model request.
type Script struct {
	Turns []Turn `json:"turns"`
	// Final is the text answered once the turns are used up.
	Final string `json:"final,omitempty"`
	// FinalError, when set, is answered instead of Final to every request
	// past the turns: an upstream that keeps failing, however often the
	// client retries.
	FinalError *ErrorTurn `json:"final_error,omitempty"`
	// FinalFrom, when set, is a regular expression with one group: a
	// request past the turns is answered with the group's text as found in
	// the last of the request's user texts that it matches (a smoke test's
	// "Reply with exactly: X" answered with X, which no fixed script
	// knows); a request none of whose texts matches gets Final.
	FinalFrom string `json:"final_from,omitempty"`
}

// Turn is one model answer: text, a tool call, both (text first), or an
// error status.
type Turn struct {
	Text     string     `json:"text,omitempty"`
	ToolCall *ToolCall  `json:"tool_call,omitempty"`
	Error    *ErrorTurn `json:"error,omitempty"`
	// HoldMS holds a streamed answer open: the stream starts (on the
	// Responses API with response.created), then waits up to HoldMS
	// milliseconds before the rest is sent. A client that gives up on the
	// stream first (codex abandons it for a steer, or on turn/interrupt)
	// ends the hold, and the turn is consumed all the same.
	HoldMS int `json:"hold_ms,omitempty"`
}

// ToolCall asks the client to call a tool. Name is the tool as the model
// sees it: for Claude Code an MCP tool is mcp__<server>__<tool>; for Codex an
// MCP tool is Name <tool> in Namespace mcp__<server>, while an app-server
// dynamic tool has no namespace; for Gemini CLI an MCP tool is
// mcp_<server>_<tool>.
type ToolCall struct {
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	// ID, on the Gemini API, is the functionCall's id; by default it has
	// none, as the API gives none, and the client makes its own.
	ID string `json:"id,omitempty"`
	// Freeform, on the Responses API, makes the call a custom (freeform)
	// tool call whose input is this text, the way codex's apply_patch is
	// called; Input is then unused.
	Freeform string `json:"freeform,omitempty"`
}

// ErrorTurn answers a request with an HTTP error status and the vendor's
// error body. Type defaults from the status (529 overloaded_error, …).
type ErrorTurn struct {
	Status  int    `json:"status"`
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string `json:"retry_after,omitempty"`
}

// Texts is a script of plain text answers, one per request.
func Texts(texts ...string) Script {
	s := Script{}
	for _, t := range texts {
		s.Turns = append(s.Turns, Turn{Text: t})
	}
	return s
}

// LoadScript reads a script from a JSON file (see ParseScript).
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("reading the model script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("model script %s: %w", path, err)
	}
	return s, nil
}

// maxScript bounds a script file; scripts are a handful of turns.
const maxScript = 1 << 20

// maxHoldMS bounds a held stream, so that a test nobody releases still ends.
const maxHoldMS = 120_000

// ParseScript reads a script: either {"turns":[…],"final":"…"} or a bare
// list of turns. Unknown fields are refused so that a typo does not silently
// turn into a text answer.
func ParseScript(data []byte) (Script, error) {
	if len(data) > maxScript {
		return Script{}, fmt.Errorf("script is %d bytes, more than the %d a script may have", len(data), maxScript)
	}
	var s Script
	trimmed := bytes.TrimSpace(data)
	var err error
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = decodeStrict(trimmed, &s.Turns)
	} else {
		err = decodeStrict(trimmed, &s)
	}
	if err != nil {
		return Script{}, err
	}
	for i, t := range s.Turns {
		if err := t.check(); err != nil {
			return Script{}, fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	if s.FinalError != nil {
		if err := (Turn{Error: s.FinalError}).check(); err != nil {
			return Script{}, fmt.Errorf("final_error: %w", err)
		}
	}
	if s.FinalFrom != "" {
		if _, err := s.finalFrom(); err != nil {
			return Script{}, err
		}
	}
	return s, nil
}

// finalFrom compiles FinalFrom, nil when it is unset.
func (s Script) finalFrom() (*regexp.Regexp, error) {
	if s.FinalFrom == "" {
		return nil, nil
	}
	re, err := regexp.Compile(s.FinalFrom)
	if err != nil {
		return nil, fmt.Errorf("final_from: %w", err)
	}
	if re.NumSubexp() != 1 {
		return nil, fmt.Errorf("final_from %q must have exactly one group, the text answered", s.FinalFrom)
	}
	return re, nil
}

// answerFrom is the text re's group finds in the last of texts it
// matches, and whether one matched.
func answerFrom(re *regexp.Regexp, texts []string) (string, bool) {
	for i := len(texts) - 1; i >= 0; i-- {
		if m := re.FindStringSubmatch(texts[i]); m != nil {
			return m[1], true
		}
	}
	return "", false
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a model script: %w", err)
	}
	if dec.More() {
		return errors.New("not a model script: trailing data after the JSON value")
	}
	return nil
}

func (t Turn) check() error {
	switch {
	case t.HoldMS < 0 || t.HoldMS > maxHoldMS:
		return fmt.Errorf("hold_ms %d is not between 0 and %d", t.HoldMS, maxHoldMS)
	case t.Error != nil && (t.Text != "" || t.ToolCall != nil || t.HoldMS != 0):
		return errors.New("an error turn carries nothing else")
	case t.Error != nil:
		if t.Error.Status < 400 || t.Error.Status > 599 {
			return fmt.Errorf("error status %d is not between 400 and 599", t.Error.Status)
		}
	case t.ToolCall != nil:
		if strings.TrimSpace(t.ToolCall.Name) == "" {
			return errors.New("tool_call needs a name")
		}
		if t.ToolCall.Freeform != "" && len(t.ToolCall.Input) > 0 {
			return fmt.Errorf("tool_call %s: a freeform call carries its text, not an input", t.ToolCall.Name)
		}
		if len(t.ToolCall.Input) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(t.ToolCall.Input, &obj); err != nil || obj == nil {
				return fmt.Errorf("tool_call %s: input must be a JSON object", t.ToolCall.Name)
			}
		}
	case t.Text == "":
		return errors.New("a turn needs text, a tool_call or an error")
	}
	return nil
}

// input is the tool call's input as a compact JSON object ({} when absent).
func (c *ToolCall) input() string {
	if len(c.Input) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, c.Input); err != nil {
		return "{}" // ParseScript checked it; a hand-built Script may not have been
	}
	return b.String()
}

// errorType is the vendor error type for a status when the turn names none.
func (e *ErrorTurn) errorType() string {
	if e.Type != "" {
		return e.Type
	}
	switch e.Status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}
