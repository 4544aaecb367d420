package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
)

// gemini speaks the Gemini API as Gemini CLI asks it: POST
// …/models/MODEL:streamGenerateContent?alt=sse for every turn, answered as
// data-only events each holding a whole GenerateContentResponse (a text is
// cut in two events, the finishReason and usage on the last), and POST
// …/models/MODEL:generateContent for a side call, which asks for JSON
// (the router of -m auto): answered from its schema, consuming no turn.
// A functionCall carries no id, as the API gives none, unless the script's
// tool_call names one.
type gemini struct{}

func (gemini) isModelRequest(r *http.Request) bool {
	_, method, ok := geminiTarget(r.URL.Path)
	return r.Method == http.MethodPost && ok && (method == "streamGenerateContent" || method == "generateContent")
}

// geminiTarget splits …/models/MODEL:METHOD.
func geminiTarget(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	return strings.Cut(path[i+len("/models/"):], ":")
}

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text             *string `json:"text"`
		Thought          bool    `json:"thought"`
		FunctionResponse *struct {
			ID       string                     `json:"id"`
			Name     string                     `json:"name"`
			Response map[string]json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	} `json:"parts"`
}

func (gemini) parse(body []byte, req *Request) {
	model, method, _ := geminiTarget(req.Path)
	req.Model, req.Stream = model, method == "streamGenerateContent"
	var b struct {
		Contents []geminiContent `json:"contents"`
		Tools    []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string          `json:"responseMimeType"`
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	if json.Unmarshal(body, &b) != nil {
		return
	}
	c := b.GenerationConfig
	req.Side = !req.Stream && (c.ResponseMimeType == "application/json" || len(c.ResponseJSONSchema) > 0 || len(c.ResponseSchema) > 0)
	if req.Side {
		req.sideSchema = c.ResponseJSONSchema
		if len(req.sideSchema) == 0 {
			req.sideSchema = c.ResponseSchema
		}
	}
	for _, t := range b.Tools {
		for _, d := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, d.Name)
		}
	}
	for _, content := range b.Contents {
		if content.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range content.Parts {
			if p.Text != nil && !p.Thought {
				texts = append(texts, *p.Text)
			}
		}
		if len(texts) > 0 {
			req.UserTexts = append(req.UserTexts, strings.Join(texts, "\n"))
		}
	}
	if n := len(b.Contents); n > 0 && b.Contents[n-1].Role == "user" {
		for _, p := range b.Contents[n-1].Parts {
			if fr := p.FunctionResponse; fr != nil {
				id := fr.ID
				if id == "" {
					id = fr.Name
				}
				res := ToolResult{CallID: id, Content: textOf(fr.Response["output"])}
				if e, ok := fr.Response["error"]; ok {
					res.Content, res.IsError = textOf(e), true
				}
				req.ToolResults = append(req.ToolResults, res)
			}
		}
	}
}

// response is one GenerateContentResponse.
func (gemini) response(req *Request, id int, parts []map[string]any, finish bool) map[string]any {
	model := req.Model
	if model == "" {
		model = "scripted"
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	r := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": fmt.Sprintf("resp_%04d", id)}
	if finish {
		cand["finishReason"] = "STOP"
		r["usageMetadata"] = map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
	}
	return r
}

// chunks is the turn's parts as the events of a stream cut them: the text
// in two (a client joins a response's text however it is cut), then the
// call.
func (gemini) chunks(t Turn) [][]map[string]any {
	var out [][]map[string]any
	if t.Text != "" {
		head, tail := halves(t.Text)
		out = append(out, []map[string]any{{"text": head}})
		if tail != "" {
			out = append(out, []map[string]any{{"text": tail}})
		}
	}
	if c := t.ToolCall; c != nil {
		call := map[string]any{"name": c.Name, "args": json.RawMessage(c.input())}
		if c.ID != "" {
			call["id"] = c.ID
		}
		out = append(out, []map[string]any{{"functionCall": call}})
	}
	return out
}

// halves cuts s in two at a rune boundary near its middle.
func halves(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

func (g gemini) answer(w http.ResponseWriter, req *Request, t Turn, id int, hold func() bool) {
	if req.Side {
		text, _ := json.Marshal(fillSchema(req.sideSchema))
		writeJSON(w, http.StatusOK, g.response(req, id, []map[string]any{{"text": string(text)}}, true))
		return
	}
	chunks := g.chunks(t)
	if !req.Stream {
		if !hold() {
			return
		}
		var parts []map[string]any
		for _, c := range chunks {
			parts = append(parts, c...)
		}
		writeJSON(w, http.StatusOK, g.response(req, id, parts, true))
		return
	}
	s := startSSE(w)
	if !hold() {
		return
	}
	for i, c := range chunks {
		s.data(g.response(req, id, c, i == len(chunks)-1))
	}
}

// fillSchema is a value a JSON schema (the API's or JSON Schema's, types
// in either case) accepts: an object with each property filled, a string
// "scripted", a number 0, an enum's first value. A number is 0 because
// the one Gemini CLI asks for is its loop check's confidence (from the
// 30th turn of a prompt on): at 0.9 or more it stops the session, and a
// scripted session of many calls is no loop.
func fillSchema(raw json.RawMessage) any {
	var s struct {
		Type       string                     `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch strings.ToLower(s.Type) {
	case "string":
		return "scripted"
	case "integer", "number":
		return 0
	case "boolean":
		return true
	case "array":
		return []any{fillSchema(s.Items)}
	}
	out := map[string]any{}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[k] = fillSchema(s.Properties[k])
	}
	return out
}

// geminiStatus is the API's status word for an HTTP status.
func geminiStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

// fail answers as the Gemini API does: {"error":{code,message,status}},
// the status word the turn's type when it names one.
func (gemini) fail(w http.ResponseWriter, status int, typ, message string) {
	word := geminiStatus(status)
	if typ != "" && strings.ToUpper(typ) == typ {
		word = typ
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": word}})
}
