package claude

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// How Claude Code 2.1.328 turns the model's tool input on the wire into
// what its PreToolUse hook, mcp-serve's tools/call and its stream-json
// line show (docs/wire-facts.md, part A1), so that a request or a line is
// held to the call the model really made, through these rewrites and no
// others:
//
//   - the input is JSON.parse of the deltas: a duplicate key keeps its
//     last value, numbers are doubles;
//   - a top-level string the tool wants as a number or a boolean is
//     coerced ("2" → 2, "true" → true), everywhere;
//   - Edit gains replace_all:false when the model left it out, everywhere;
//   - the hook only: file_path and notebook_path are made absolute against
//     the session's cwd (~ is HOME), and Read drops an offset below 0 and
//     a limit of 0 or less;
//   - an MCP tool's input that is not an object is spread into one
//     (["x"] → {"0":"x"}, null → {}), at the hook and tools/call.

// seen is what a seam or line shows, against which wire input.
type seen int

const (
	atHook seen = iota // the PreToolUse hook's tool_input, or mcp-serve's arguments
	atLine             // the stream-json assistant line
)

// pathKeys are the native tools' path fields the hook resolves.
var pathKeys = []string{"file_path", "notebook_path"}

// matchInput is nil when shown is what Claude Code makes of wire for
// tool at place, else the first difference.
func matchInput(tool string, wire, shown json.RawMessage, place seen, cwd, home string) error {
	w, err := kind.DecodeJSON(orNull(wire))
	if err != nil {
		return fmt.Errorf("the wire's input is not JSON")
	}
	s, err := kind.DecodeJSON(orNull(shown))
	if err != nil {
		return fmt.Errorf("the input shown is not JSON")
	}
	mcp := strings.HasPrefix(tool, "mcp__")
	if mcp && place == atHook {
		w = spread(w)
	}
	wm, wok := w.(map[string]any)
	sm, sok := s.(map[string]any)
	if !wok || !sok {
		if kind.EqualJSON(w, s, kind.NumbersAsDoubles) {
			return nil
		}
		return fmt.Errorf("the input differs from the wire's")
	}
	keys := map[string]bool{}
	for k := range wm {
		keys[k] = true
	}
	for k := range sm {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		wv, inWire := wm[k]
		sv, inShown := sm[k]
		switch {
		case inWire && inShown:
			if sameValue(k, wv, sv, !mcp && place == atHook, cwd, home) {
				continue
			}
		case !inWire && tool == "Edit" && k == "replace_all" && sv == false:
			continue
		case !inShown && tool == "Read" && place == atHook && droppedPaging(k, wv):
			continue
		}
		return fmt.Errorf("field %q differs from the wire's", k)
	}
	return nil
}

// sameValue: equal, or equal once coerced from a string, or (resolving)
// the same path once resolved the hook's way.
func sameValue(key string, wire, shown any, resolve bool, cwd, home string) bool {
	if kind.EqualJSON(wire, shown, kind.NumbersAsDoubles) {
		return true
	}
	str, isStr := wire.(string)
	if !isStr {
		return false
	}
	switch v := shown.(type) {
	case json.Number:
		return kind.NumbersAsDoubles(json.Number(strings.TrimSpace(str)), v)
	case bool:
		return str == strconv.FormatBool(v)
	case string:
		return resolve && isPathKey(key) && resolvePath(str, cwd, home) == v
	}
	return false
}

func isPathKey(k string) bool {
	for _, p := range pathKeys {
		if p == k {
			return true
		}
	}
	return false
}

// resolvePath is the hook's path rule: trimmed, ~ expanded, a relative
// path resolved against cwd, an absolute one cleaned but for a trailing
// slash (Node's normalize and resolve).
func resolvePath(p, cwd, home string) string {
	p = strings.TrimSpace(p)
	switch {
	case p == "~":
		p = home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(home, p[2:])
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(cwd, p)
	}
	clean := filepath.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

// hookForm is a stream-json line's native tool input as the PreToolUse
// hook shows the same call (the hook-only rewrites: path fields made
// absolute, Read's meaningless paging dropped), so that the record's call
// and its presentation at the hook are one request, not a mutated one.
// An MCP tool's input, and anything that is not an object, is returned
// as it was.
func hookForm(tool string, input json.RawMessage, cwd, home string) json.RawMessage {
	if strings.HasPrefix(tool, "mcp__") {
		return input
	}
	v, err := kind.DecodeJSON(orNull(input))
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return input
	}
	changed := false
	for _, k := range pathKeys {
		if p, ok := m[k].(string); ok {
			if r := resolvePath(p, cwd, home); r != p {
				m[k], changed = r, true
			}
		}
	}
	if tool == "Read" {
		for k, x := range m {
			if droppedPaging(k, x) {
				delete(m, k)
				changed = true
			}
		}
	}
	if !changed {
		return input
	}
	out, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return out
}

// droppedPaging: the hook leaves out a Read offset below 0 and a limit of
// 0 or less.
func droppedPaging(key string, v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := n.Float64()
	return err == nil && (key == "offset" && f < 0 || key == "limit" && f <= 0)
}

// spread is an MCP input that is not an object as Claude Code hands it on:
// an array or a string by index, null as {}.
func spread(v any) any {
	switch x := v.(type) {
	case nil:
		return map[string]any{}
	case []any:
		m := map[string]any{}
		for i, e := range x {
			m[strconv.Itoa(i)] = e
		}
		return m
	case string:
		m := map[string]any{}
		for i, r := range []rune(x) {
			m[strconv.Itoa(i)] = string(r)
		}
		return m
	}
	return v
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

var _ kind.WireMatcher = Kind{}

// MatchRequest holds a request of the hook or of the owned surface's
// server to the model's call: the same tool and an input Claude Code would
// have made of the wire's (the server's input has its null optional fields
// taken out, as mcp-serve does).
func (Kind) MatchRequest(call loopback.Call, req decide.Request, plan *kind.Plan) error {
	name, wire, shown := req.Tool, kind.WireInput(call), req.Input
	if req.Seam == record.SeamOwnedTool {
		name = OwnedPrefix + req.Tool
		wire, shown = kind.DropNulls(wire), kind.DropNulls(shown)
	}
	if name != call.Name {
		return fmt.Errorf("the wire's call is %s, not %s", call.Name, name)
	}
	return matchInput(name, wire, shown, atHook, plan.Dir, envOf(plan, "HOME"))
}

// MatchLine holds a stream-json tool_use line to the model's call.
func MatchLine(call loopback.Call, name string, input json.RawMessage) error {
	if name != call.Name {
		return fmt.Errorf("the wire's call is %s, not %s", call.Name, name)
	}
	return matchInput(name, kind.WireInput(call), input, atLine, "", "")
}

// envOf is a variable of the plan's environment.
func envOf(plan *kind.Plan, key string) string {
	for _, kv := range plan.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
