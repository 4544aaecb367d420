package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// How Gemini CLI 0.61.0 shows the model's functionCall (docs/wire-facts.md):
// its name trimmed ("generic_tool" when blank), its args as JSON.parse
// reads them (a duplicate key keeps its last value, numbers are doubles;
// absent args are {}), the same at its tool_use line, its BeforeTool hook
// and an MCP server's tools/call (which mcp-serve shows with its null
// optional fields taken out). The call's id is the API's, prefixed with
// the name and "__", or, where the API gave none (the Gemini API gives
// none), one the CLI makes: the session binds that to the wire's call when
// the tool_use line names it.

// callName is the name Gemini CLI calls a functionCall by.
func callName(name string) string {
	if n := strings.TrimSpace(name); n != "" {
		return n
	}
	return "generic_tool"
}

// sameCall reports whether a call shown as name with input is the wire's
// call: the same name and the same input (owned: with null fields left
// out on both sides).
func sameCall(call loopback.Call, name string, input json.RawMessage, owned bool) error {
	if callName(call.Name) != name {
		return fmt.Errorf("the wire's call is %s, not %s", callName(call.Name), name)
	}
	wire, shown := kind.WireInput(call), input
	if owned {
		wire, shown = kind.DropNulls(wire), kind.DropNulls(shown)
	}
	w, err := kind.DecodeJSON(orEmpty(wire))
	if err != nil {
		return fmt.Errorf("the wire's input is not JSON")
	}
	s, err := kind.DecodeJSON(orEmpty(shown))
	if err != nil {
		return fmt.Errorf("the input shown is not JSON")
	}
	if !kind.EqualJSON(w, s, kind.NumbersAsDoubles) {
		return fmt.Errorf("the input differs from the wire's")
	}
	return nil
}

// orEmpty is absent input as Gemini CLI reads it: {}.
func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage(`{}`)
	}
	return b
}

var _ kind.WireMatcher = Kind{}

// MatchRequest holds a request of the hook or of the owned server to the
// model's call: the same tool, and the input Gemini CLI made of the wire's.
func (Kind) MatchRequest(call loopback.Call, req decide.Request, _ *kind.Plan) error {
	if req.Seam == record.SeamOwnedTool {
		return sameCall(call, OwnedPrefix+req.Tool, req.Input, true)
	}
	return sameCall(call, req.Tool, req.Input, false)
}

// MatchLine holds a stream-json tool_use line to the model's call.
func MatchLine(call loopback.Call, name string, input json.RawMessage) error {
	return sameCall(call, name, input, false)
}

// lastText is Gemini CLI's final answer as the wire shows it: the text of
// the last response that completed, when it made no call and its text is
// not blank.
func lastText(rs []loopback.Response) *string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].End != loopback.EndCompleted || !rs[i].Stream {
			continue // open, failed, or a side call (the router's, a whole JSON body)
		}
		var b strings.Builder
		for _, it := range rs[i].Items {
			switch it.Kind {
			case loopback.KindToolCall:
				return nil
			case loopback.KindText:
				b.WriteString(it.Text)
			}
		}
		if t := b.String(); strings.TrimSpace(t) != "" {
			return &t
		}
		return nil
	}
	return nil
}
