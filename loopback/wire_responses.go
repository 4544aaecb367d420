package loopback

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// responsesDialect reads the OpenAI Responses API: an event stream whose
// response.output_item.done events carry each output item whole (message,
// function_call, custom_tool_call, reasoning, …), ended by
// response.completed, response.incomplete or response.failed, or an error
// event; or a whole response or error as a JSON body. The deltas
// (response.output_text.delta, …) repeat what the done items hold and are
// not read.
type responsesDialect struct{}

var responsesEvents = []string{"response.created", "response.in_progress", "response.output_item.done",
	"response.completed", "response.incomplete", "response.failed", "error"}

// name: codex reads every event of the stream, whatever its name, by the
// type its data states.
func (responsesDialect) name([]byte) string { return "" }

func (responsesDialect) typeOf(_ string, dataType []byte) string {
	return knownName(responsesEvents, dataType)
}

// skip: an event whose data opens with a type the view does not read (the
// deltas, most of a stream, which the done items repeat) is not gathered.
// The type is read in the API's own shape only; any other event is
// gathered and its type read whole.
// asked: the view reads no requests of this API.
func (responsesDialect) asked([]byte) *Asked { return nil }

func (responsesDialect) skip(data []byte) bool {
	const head = `{"type":"`
	if len(data) < len(head) || string(data[:len(head)]) != head {
		return false
	}
	rest := data[len(head):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return false
	}
	return knownName(responsesEvents, rest[:end]) == "-"
}

// quick reads nothing: the deltas are not read at all.
func (responsesDialect) quick(string, []byte) (quickDelta, bool) { return quickDelta{}, false }

func (responsesDialect) event(s *wireStream, typ string, data []byte) {
	var payload []byte // item or response
	var code, etype string
	ok := members(data, func(k, v []byte) bool {
		switch {
		case keyIs(k, "item"), keyIs(k, "response"):
			payload = v
		case keyIs(k, "code"):
			code = stringValue(v)
		case keyIs(k, "error"):
			etype = responsesErrorType(v)
		}
		return true
	})
	if !ok {
		s.unreadable()
		return
	}
	switch typ {
	case "response.output_item.done":
		s.responsesItemDone(payload)
	case "error":
		s.head.End, s.head.ErrorType = EndFailed, cmp.Or(code, etype)
		s.errorEvent(data)
	default: // the response's own events
		s.responsesHead(payload)
		switch typ {
		case "response.completed":
			s.head.End = EndCompleted
		case "response.incomplete":
			s.head.End = EndIncomplete
		case "response.failed":
			s.head.End = EndFailed
			s.errorEvent(data)
		}
	}
}

// responsesHead reads a response object's own fields, skipping its output
// (the done items carried it already).
func (s *wireStream) responsesHead(resp []byte) {
	if !members(resp, func(k, v []byte) bool {
		switch {
		case keyIs(k, "id"):
			if id := stringValue(v); id != "" {
				s.head.ID = id
			}
		case keyIs(k, "model"):
			if m := stringValue(v); m != "" {
				s.head.Model = m
			}
		case keyIs(k, "status"):
			if st := stringValue(v); st != "" && st != "in_progress" && st != "queued" {
				s.head.StopReason = st
			}
		case keyIs(k, "incomplete_details"):
			members(v, func(k, v []byte) bool {
				if keyIs(k, "reason") {
					if r := stringValue(v); r != "" {
						s.head.StopReason = r
					}
				}
				return true
			})
		case keyIs(k, "error"):
			if t := responsesErrorType(v); t != "" {
				s.head.ErrorType = t
			}
		case keyIs(k, "usage") && len(v) > 0 && v[0] == '{':
			readUsage(&s.head.Usage, v)
		}
		return true
	}) {
		s.unreadable()
	}
}

// responsesItemDone adds one whole output item. Text and tool calls are
// held as sent, to be decoded by a snapshot; a reasoning item (its
// encrypted content can be large) only by its kind.
func (s *wireStream) responsesItemDone(item []byte) {
	var typ, id, callID string
	if !members(item, func(k, v []byte) bool {
		switch {
		case keyIs(k, "type"):
			typ = stringValue(v)
		case keyIs(k, "id"):
			id = stringValue(v)
		case keyIs(k, "call_id"):
			callID = stringValue(v)
		}
		return true
	}) {
		s.unreadable()
		return
	}
	it := wireItem{kind: responsesKind(typ), typ: typ, id: id, callID: callID}
	if it.kind == KindText || it.kind == KindToolCall {
		it.form = rawResponsesItem
	}
	i := s.newItem(it)
	if it.form == rawResponsesItem {
		s.appendRaw(&s.items[i], item)
	}
	s.items[i].complete = true
}

func responsesKind(typ string) ItemKind {
	switch typ {
	case "message":
		return KindText
	case "function_call", "custom_tool_call":
		return KindToolCall
	case "reasoning":
		return KindReasoning
	}
	return KindOther
}

// decodeResponsesItem decodes one output item.
func decodeResponsesItem(raw []byte) (Item, error) {
	var it struct {
		Type      string  `json:"type"`
		ID        string  `json:"id"`
		CallID    string  `json:"call_id"`
		Name      string  `json:"name"`
		Namespace string  `json:"namespace"`
		Arguments *string `json:"arguments"`
		Input     *string `json:"input"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := jsonscan.Unmarshal(raw, &it); err != nil {
		return Item{}, err
	}
	v := Item{Kind: responsesKind(it.Type), Type: it.Type, ID: it.ID, Complete: true}
	switch v.Kind {
	case KindText:
		var b strings.Builder
		for _, c := range it.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
		v.Text = b.String()
	case KindToolCall:
		v.Call = &Call{ID: it.CallID, Name: it.Name, Namespace: it.Namespace, Complete: true, InputForm: InputUnparsed}
		switch {
		case it.Type == "custom_tool_call" && it.Input != nil:
			v.Call.Input, v.Call.InputForm = appendJSONString(nil, *it.Input), InputText
		case it.Arguments != nil:
			v.Call.Input, v.Call.InputForm = parsedInput(*it.Arguments)
		}
	}
	return v, nil
}

// responsesErrorType is an error object's code, else its type.
func responsesErrorType(v []byte) string {
	var code, typ string
	members(v, func(k, v []byte) bool {
		switch {
		case keyIs(k, "code"):
			code = stringValue(v)
		case keyIs(k, "type"):
			typ = stringValue(v)
		}
		return true
	})
	return cmp.Or(code, typ)
}

func (responsesDialect) body(r *Response, status int, doc []byte) error {
	var m struct {
		Object            string            `json:"object"`
		ID                string            `json:"id"`
		Model             string            `json:"model"`
		Status            string            `json:"status"`
		Output            []json.RawMessage `json:"output"`
		Error             json.RawMessage   `json:"error"`
		Usage             json.RawMessage   `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	}
	if err := jsonscan.Unmarshal(doc, &m); err != nil {
		return err
	}
	if status >= 400 {
		r.End, r.ErrorType = EndFailed, responsesErrorType(m.Error)
		return nil
	}
	if m.Object != "response" {
		r.End = EndOther
		return errors.New("not a Responses response")
	}
	r.ID, r.Model, r.StopReason = m.ID, m.Model, m.Status
	if len(m.Usage) > 0 && m.Usage[0] == '{' {
		readUsage(&r.Usage, m.Usage)
	}
	if m.IncompleteDetails != nil && m.IncompleteDetails.Reason != "" {
		r.StopReason = m.IncompleteDetails.Reason
	}
	switch m.Status {
	case "completed":
		r.End = EndCompleted
	case "incomplete":
		r.End = EndIncomplete
	case "failed":
		r.End, r.ErrorType = EndFailed, responsesErrorType(m.Error)
	}
	for _, raw := range m.Output {
		v, err := decodeResponsesItem(raw)
		if err != nil {
			return err
		}
		r.Items = append(r.Items, v)
	}
	return nil
}
