package loopback

import (
	"encoding/json"
	"errors"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// anthropicDialect reads the Messages API: an event stream of
// message_start, per content block content_block_start, _delta (text_delta,
// input_json_delta, thinking_delta, …) and _stop, message_delta,
// message_stop, or an error event; or a whole message (stream false) or
// error as a JSON body.
type anthropicDialect struct{}

var anthropicEvents = []string{"message_start", "content_block_start", "content_block_delta",
	"content_block_stop", "message_delta", "message_stop", "error"}

// name: the SDK Claude Code reads the stream with takes the events named
// for a message (and error); it skips every other (ping, an unknown one).
func (anthropicDialect) name(ev []byte) string { return knownName(anthropicEvents, ev) }

// typeOf: an event the SDK takes is what its data's type says, but an
// "error" event, which it throws on whatever its data holds.
func (anthropicDialect) typeOf(ev string, dataType []byte) string {
	if ev == "error" {
		return ev
	}
	return knownName(anthropicEvents, dataType)
}

// skip: every event of a Messages stream the SDK takes is read.
// asked: the view reads no requests of this API.
func (anthropicDialect) asked([]byte) *Asked { return nil }

func (anthropicDialect) skip([]byte) bool { return false }

// knownName is the one of names that ev spells, or "-".
func knownName(names []string, ev []byte) string {
	for _, n := range names {
		if string(ev) == n {
			return n
		}
	}
	return "-"
}

func (anthropicDialect) event(s *wireStream, typ string, data []byte) {
	switch typ {
	case "content_block_delta": // deltas in another shape than quick reads
		index, delta := -1, []byte(nil)
		ok := members(data, func(k, v []byte) bool {
			switch {
			case keyIs(k, "index"):
				index, _ = intValue(v)
			case keyIs(k, "delta"):
				delta = v
			}
			return true
		})
		it := s.block(index)
		if !ok || it == nil {
			s.unreadable()
			return
		}
		var dtype, text []byte
		members(delta, func(k, v []byte) bool {
			switch {
			case keyIs(k, "type"):
				dtype, _ = content(v)
			case keyIs(k, "text"), keyIs(k, "partial_json"):
				text, _ = content(v)
			}
			return true
		})
		switch string(dtype) {
		case "text_delta":
			if it.form == rawText {
				s.appendRaw(it, text)
			}
		case "input_json_delta":
			if it.form == rawInput {
				s.appendRaw(it, text)
			}
		} // thinking_delta, signature_delta, citations_delta: not held
	case "content_block_start":
		s.anthropicBlockStart(data)
	case "content_block_stop":
		index := -1
		members(data, func(k, v []byte) bool {
			if keyIs(k, "index") {
				index, _ = intValue(v)
			}
			return true
		})
		if it := s.block(index); it != nil {
			it.complete = true
		} else {
			s.unreadable()
		}
	case "message_start":
		var msg []byte
		if !members(data, func(k, v []byte) bool {
			if keyIs(k, "message") {
				msg = v
			}
			return true
		}) {
			s.unreadable()
			return
		}
		members(msg, func(k, v []byte) bool {
			switch {
			case keyIs(k, "id"):
				s.head.ID = stringValue(v)
			case keyIs(k, "model"):
				s.head.Model = stringValue(v)
			case keyIs(k, "stop_reason"):
				if r := stringValue(v); r != "" {
					s.head.StopReason = r
				}
			case keyIs(k, "usage"):
				readUsage(&s.head.Usage, v)
			}
			return true
		})
	case "message_delta":
		members(data, func(k, v []byte) bool {
			if keyIs(k, "usage") {
				readUsage(&s.head.Usage, v)
			}
			if keyIs(k, "delta") {
				members(v, func(k, v []byte) bool {
					if keyIs(k, "stop_reason") {
						if r := stringValue(v); r != "" {
							s.head.StopReason = r
						}
					}
					return true
				})
			}
			return true
		})
	case "message_stop":
		s.head.End = EndCompleted
	case "error":
		s.head.End, s.head.ErrorType = EndFailed, anthropicErrorType(data)
		s.errorEvent(data)
	}
}

// The exact shape the Messages API gives its text and input deltas, read
// without walking them as objects; anything else takes the general path.
const (
	deltaHead  = `{"type":"content_block_delta","index":`
	textDelta  = `,"delta":{"type":"text_delta","text":`
	inputDelta = `,"delta":{"type":"input_json_delta","partial_json":`
)

// quick reads a text_delta or input_json_delta in the API's own shape:
// most events of a stream are these.
func (anthropicDialect) quick(ev string, d []byte) (quickDelta, bool) {
	if ev == "error" {
		return quickDelta{}, false
	}
	index, kind, content, ok := fastDelta(d)
	return quickDelta{set: ok, index: index, kind: kind, content: content}, ok
}

// fastDelta reads a text_delta or input_json_delta in the API's own shape:
// the block's index, which content it is (rawText, rawInput) and the
// content as escaped; ok is false for anything else.
func fastDelta(d []byte) (index int, kind rawForm, content []byte, ok bool) {
	if len(d) < len(deltaHead) || string(d[:len(deltaHead)]) != deltaHead {
		return 0, 0, nil, false
	}
	rest := d[len(deltaHead):]
	i := 0
	for ; i < len(rest) && i < 9 && '0' <= rest[i] && rest[i] <= '9'; i++ {
		index = index*10 + int(rest[i]-'0')
	}
	if i == 0 || i > 1 && rest[0] == '0' {
		return 0, 0, nil, false
	}
	rest = rest[i:]
	switch {
	case len(rest) > len(textDelta) && string(rest[:len(textDelta)]) == textDelta:
		kind, rest = rawText, rest[len(textDelta):]
	case len(rest) > len(inputDelta) && string(rest[:len(inputDelta)]) == inputDelta:
		kind, rest = rawInput, rest[len(inputDelta):]
	default:
		return 0, 0, nil, false
	}
	if rest[0] != '"' {
		return 0, 0, nil, false
	}
	n := stringLen(rest)
	if n < 0 || string(rest[n:]) != `}}` {
		return 0, 0, nil, false
	}
	return index, kind, rest[1 : n-1], true
}

// anthropicBlockStart opens a content block.
func (s *wireStream) anthropicBlockStart(data []byte) {
	index, block := -1, []byte(nil)
	members(data, func(k, v []byte) bool {
		switch {
		case keyIs(k, "index"):
			index, _ = intValue(v)
		case keyIs(k, "content_block"):
			block = v
		}
		return true
	})
	var typ, id, name string
	var input, text []byte
	if index < 0 || !members(block, func(k, v []byte) bool {
		switch {
		case keyIs(k, "type"):
			typ = stringValue(v)
		case keyIs(k, "id"):
			id = stringValue(v)
		case keyIs(k, "name"):
			name = stringValue(v)
		case keyIs(k, "input"):
			input = v
		case keyIs(k, "text"):
			text, _ = content(v)
		}
		return true
	}) {
		s.unreadable()
		return
	}
	it := wireItem{kind: KindOther, typ: typ, id: id, index: index}
	switch typ {
	case "text":
		it.kind, it.form = KindText, rawText
	case "tool_use":
		it.kind, it.form, it.callID, it.name = KindToolCall, rawInput, id, name
	case "thinking", "redacted_thinking":
		it.kind = KindReasoning
	}
	i := s.newItem(it)
	switch it.form {
	case rawText:
		s.appendRaw(&s.items[i], text)
	case rawInput:
		if len(input) > 0 && s.take(len(input)) {
			s.items[i].startInput = append([]byte(nil), input...)
		}
	}
}

// block is the content block with the API's index, or nil.
func (s *wireStream) block(index int) *wireItem {
	if index < 0 {
		return nil
	}
	for i := len(s.items) - 1; i >= 0; i-- {
		if s.items[i].index == index {
			return &s.items[i]
		}
	}
	return nil
}

// anthropicErrorType is error.type of an error document.
func anthropicErrorType(doc []byte) string {
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = jsonscan.Unmarshal(doc, &e)
	return e.Error.Type
}

// anthropicBlock is a content block of a whole message.
type anthropicBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Text  string          `json:"text"`
	Input json.RawMessage `json:"input"`
}

func (anthropicDialect) body(r *Response, status int, doc []byte) error {
	var m struct {
		Type       string           `json:"type"`
		ID         string           `json:"id"`
		Model      string           `json:"model"`
		StopReason *string          `json:"stop_reason"`
		Content    []anthropicBlock `json:"content"`
		Usage      json.RawMessage  `json:"usage"`
		Error      *struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := jsonscan.Unmarshal(doc, &m); err != nil {
		return err
	}
	switch {
	case status >= 400 || m.Type == "error":
		r.End = EndFailed
		if m.Error != nil {
			r.ErrorType = m.Error.Type
		}
		return nil
	case m.Type != "message":
		r.End = EndOther
		return errors.New("not a Messages response")
	}
	r.ID, r.Model, r.End = m.ID, m.Model, EndCompleted
	if len(m.Usage) > 0 {
		readUsage(&r.Usage, m.Usage)
	}
	if m.StopReason != nil {
		r.StopReason = *m.StopReason
	}
	for _, b := range m.Content {
		v := Item{Kind: KindOther, Type: b.Type, ID: b.ID, Complete: true}
		switch b.Type {
		case "text":
			v.Kind, v.Text = KindText, b.Text
		case "tool_use":
			v.Kind = KindToolCall
			v.Call = &Call{ID: b.ID, Name: b.Name, Complete: true}
			v.Call.Input, v.Call.InputForm = parsedInput(string(b.Input))
		case "thinking", "redacted_thinking":
			v.Kind = KindReasoning
		}
		r.Items = append(r.Items, v)
	}
	return nil
}
