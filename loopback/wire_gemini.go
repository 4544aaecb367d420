package loopback

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// geminiDialect reads the Gemini API as Gemini CLI's client (@google/genai)
// does: POST …:streamGenerateContent?alt=sse answers an event stream whose
// every event is one data line holding a whole GenerateContentResponse
// (text, thought and functionCall parts of candidates[0], the finishReason
// on the last, usageMetadata), and POST …:generateContent (the router's
// and other side calls) one such response, or an error, as a JSON body.
// A functionCall carries no id unless the API gave one: the client makes
// its own, which it tells the view with Wire.Bind.
type geminiDialect struct{}

// name: the client takes data lines only; an event with a name is one its
// stream reader never yields.
func (geminiDialect) name([]byte) string { return "-" }

// typeOf: an unnamed event is a response chunk, whatever its data says.
func (geminiDialect) typeOf(ev string, _ []byte) string {
	if ev == "-" {
		return "-"
	}
	return geminiChunkEvent
}

const geminiChunkEvent = "chunk"

func (geminiDialect) skip([]byte) bool { return false }

// asked reads a GenerateContentRequest's functionDeclarations and the
// opening of its first user text. A body that is not one reads as nil.
func (geminiDialect) asked(body []byte) *Asked {
	var r struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text *string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if jsonscan.Unmarshal(body, &r) != nil {
		return nil
	}
	a := &Asked{Tools: []string{}}
	for _, t := range r.Tools {
		for _, d := range t.FunctionDeclarations {
			a.Tools = append(a.Tools, d.Name)
		}
	}
	for _, c := range r.Contents {
		if c.Role != "user" || len(c.Parts) == 0 || c.Parts[0].Text == nil {
			continue
		}
		a.Context = *c.Parts[0].Text
		if len(a.Context) > maxAskedContext {
			a.Context = strings.ToValidUTF8(a.Context[:maxAskedContext], "")
		}
		break
	}
	return a
}

func (geminiDialect) quick(string, []byte) (quickDelta, bool) { return quickDelta{}, false }

// geminiResponse is a GenerateContentResponse, or an error, as the view
// reads it: only the first candidate, which is all the client reads.
type geminiResponse struct {
	Candidates []struct {
		Content *struct {
			Parts []geminiPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		Prompt    int64 `json:"promptTokenCount"`
		Output    int64 `json:"candidatesTokenCount"`
		Cached    int64 `json:"cachedContentTokenCount"`
		Thoughts  int64 `json:"thoughtsTokenCount"`
		ToolInput int64 `json:"toolUsePromptTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string       `json:"modelVersion"`
	ResponseID   string       `json:"responseId"`
	Error        *geminiError `json:"error"`
}

// geminiPart is one part of a candidate's content.
type geminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	ExecutableCode      json.RawMessage `json:"executableCode"`
	CodeExecutionResult json.RawMessage `json:"codeExecutionResult"`
	InlineData          json.RawMessage `json:"inlineData"`
	FileData            json.RawMessage `json:"fileData"`
}

// geminiError is the API's error object: its status names it
// (RESOURCE_EXHAUSTED, UNAUTHENTICATED, …).
type geminiError struct {
	Code    json.Number `json:"code"`
	Message string      `json:"message"`
	Status  string      `json:"status"`
}

func (e *geminiError) kind() string {
	if e.Status != "" {
		return e.Status
	}
	return e.Code.String()
}

func (geminiDialect) event(s *wireStream, _ string, data []byte) {
	var r geminiResponse
	if jsonscan.Unmarshal(data, &r) != nil {
		s.unreadable()
		return
	}
	if r.Error != nil {
		s.head.End, s.head.ErrorType = EndFailed, r.Error.kind()
		s.errorEvent(data)
		return
	}
	s.geminiHead(&r)
	for _, p := range geminiParts(&r) {
		s.geminiPart(p)
	}
	if len(r.Candidates) > 0 && r.Candidates[0].FinishReason != "" {
		s.finished = true
		for i := range s.items {
			s.items[i].complete = true // nothing follows the finish
		}
	}
}

func geminiParts(r *geminiResponse) []geminiPart {
	if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
		return nil
	}
	return r.Candidates[0].Content.Parts
}

// geminiHead reads a chunk's own fields: each chunk repeats them, the last
// usage standing.
func (s *wireStream) geminiHead(r *geminiResponse) {
	if r.ResponseID != "" && s.head.ID == "" {
		s.head.ID = r.ResponseID
	}
	if r.ModelVersion != "" {
		s.head.Model = r.ModelVersion
	}
	if len(r.Candidates) > 0 && r.Candidates[0].FinishReason != "" {
		s.head.StopReason = r.Candidates[0].FinishReason
	}
	if u := r.UsageMetadata; u != nil {
		s.head.Usage = &Usage{InputTokens: u.Prompt + u.ToolInput, OutputTokens: u.Output + u.Thoughts, CacheReadTokens: u.Cached}
	}
}

// geminiPart adds one part: text to the response's open text (the client
// joins a response's text however the chunks cut it, and thoughts between
// do not part it), a thought as reasoning, a call whole; anything else by
// its kind.
func (s *wireStream) geminiPart(p geminiPart) {
	last := func() *wireItem {
		if n := len(s.items); n > 0 {
			return &s.items[n-1]
		}
		return nil
	}
	switch {
	case p.FunctionCall != nil:
		s.closeText()
		s.geminiCall(p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args)
	case p.Text != nil && p.Thought:
		if l := last(); l == nil || l.kind != KindReasoning {
			s.newItem(wireItem{kind: KindReasoning, typ: "thought", complete: true})
		}
	case p.Text != nil:
		if *p.Text == "" {
			return // the client skips an empty text
		}
		it := s.openText()
		esc := appendJSONString(nil, *p.Text)
		s.appendRaw(it, esc[1:len(esc)-1])
	default:
		typ := geminiPartKind(p)
		if typ == "" {
			return // a part with nothing the client reads (a thought signature alone)
		}
		s.closeText()
		s.newItem(wireItem{kind: KindOther, typ: typ, complete: true})
	}
}

// openText is the response's text item still open (past a thought), or a
// new one.
func (s *wireStream) openText() *wireItem {
	for i := len(s.items) - 1; i >= 0; i-- {
		it := &s.items[i]
		if it.kind == KindReasoning {
			continue
		}
		if it.kind == KindText && !it.complete {
			return it
		}
		break // anything else ends the text before it
	}
	i := s.newItem(wireItem{kind: KindText, typ: "text", form: rawText})
	return &s.items[i]
}

// closeText completes the open text: a call or other part comes between.
func (s *wireStream) closeText() {
	for i := range s.items {
		if s.items[i].kind == KindText {
			s.items[i].complete = true
		}
	}
}

func geminiPartKind(p geminiPart) string {
	switch {
	case len(p.ExecutableCode) > 0:
		return "executableCode"
	case len(p.CodeExecutionResult) > 0:
		return "codeExecutionResult"
	case len(p.InlineData) > 0:
		return "inlineData"
	case len(p.FileData) > 0:
		return "fileData"
	}
	return ""
}

// GeminiCallID is the id Gemini CLI answers a functionCall with when the
// API gave it one: prefixed with the tool's name and "__", unless it is
// already; "" when the API gave none (the client makes its own, Bind).
func GeminiCallID(name, id string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "generic_tool"
	}
	if id == "" || strings.HasPrefix(id, name+"__") {
		return id
	}
	return name + "__" + id
}

// geminiCall adds a functionCall, whole: the client reads each as one
// call, its args as they are (absent is {}).
func (s *wireStream) geminiCall(id, name string, args json.RawMessage) {
	callID := GeminiCallID(name, id)
	i := s.newItem(wireItem{kind: KindToolCall, typ: "functionCall", callID: callID, name: name, complete: true})
	v := Item{Kind: KindToolCall, Type: "functionCall", Complete: true,
		Call: &Call{ID: callID, Name: name, Complete: true, InputForm: InputUnparsed}}
	switch {
	case len(args) == 0 || string(args) == "null":
		v.Call.Input, v.Call.InputForm = json.RawMessage(`{}`), InputJSON
	case !s.take(len(args)):
		v.Truncated, s.items[i].truncated, s.head.Truncated = true, true, true
	default:
		v.Call.Input, v.Call.InputForm = parsedInput(string(args))
	}
	s.items[i].view = &v
}

func (geminiDialect) body(r *Response, status int, doc []byte) error {
	var m geminiResponse
	if err := jsonscan.Unmarshal(doc, &m); err != nil {
		return err
	}
	if status >= 400 || m.Error != nil {
		r.End = EndFailed
		if m.Error != nil {
			r.ErrorType = m.Error.kind()
		}
		return nil
	}
	if m.Candidates == nil && m.UsageMetadata == nil {
		r.End = EndOther
		return errors.New("not a GenerateContentResponse")
	}
	// Read through a stream of one event, so that a body and a chunk are
	// one reading.
	w := newWire(GeminiAPI, int64(len(doc))*2+responseCost)
	s := &wireStream{w: w, head: *r}
	s.geminiHead(&m)
	for _, p := range geminiParts(&m) {
		s.geminiPart(p)
	}
	out := s.head
	out.End = EndCompleted
	out.Items = make([]Item, 0, len(s.items))
	for i := range s.items {
		s.items[i].complete = true
		it := s.itemView(&s.items[i])
		if it.Call != nil {
			it.Call.Complete = true
		}
		out.Items = append(out.Items, it)
	}
	*r = out
	return nil
}
