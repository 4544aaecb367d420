package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/exit"
)

// The owned surface's default verbs, published when no contract is given
// (reference notes §11.3): the entries sit behind tool_invoke.
const (
	verbSearch   = "tool_search"
	verbDescribe = "tool_describe"
	verbInvoke   = "tool_invoke"
)

// verbs is the contract of the three verbs themselves, so that their
// arguments go through the same checks as any entry's.
var verbs = mustContract("the default verbs", map[string]any{
	"format": ContractFormat,
	"entries": []any{
		map[string]any{"name": verbSearch, "summary": "List the tools this server performs behind tool_invoke: name, operation, summary and effects. query keeps those whose name, operation or summary contains it; effect keeps those with that effect (read, write or process).",
			"input": objectSchema(nil, "query", str("a substring of name, operation or summary"), "effect", map[string]any{"type": "string", "enum": []any{"read", "write", "process"}})},
		map[string]any{"name": verbDescribe, "summary": "Describe one tool behind tool_invoke: its operation, summary, effects and input schema.",
			"input": objectSchema([]any{"name"}, "name", str("the tool's name, as tool_search lists it"))},
		map[string]any{"name": verbInvoke, "summary": "Call one tool behind tool_invoke with its arguments (an object, as tool_describe's input_schema says).",
			"input": objectSchema([]any{"name", "arguments"}, "name", str("the tool's name, as tool_search lists it"), "arguments", map[string]any{"type": "object", "description": "the tool's arguments"})},
	},
})

// defaultEntries builds the entries behind tool_invoke from what the server
// admits: reads always, writes only when writable, run only when programs
// are declared (its first argument is then one of them).
func defaultEntries(writable bool, programs []string) *Contract {
	pathField := str("a path relative to the workspace")
	entries := []any{
		map[string]any{"name": "fs.read", "summary": "Read a text file in the workspace.",
			"input": objectSchema([]any{"path"}, "path", pathField, "max_bytes", map[string]any{"type": "integer", "minimum": 1, "maximum": maxReadBytes, "description": fmt.Sprintf("read at most this many bytes (default %d)", defaultReadBytes)})},
		map[string]any{"name": "fs.list", "summary": "List a directory in the workspace (default: its root).",
			"input": objectSchema(nil, "path", pathField)},
		map[string]any{"name": "fs.search", "summary": "Find lines holding a literal text in the workspace's files, skipping version-control and dependency trees.",
			"input": objectSchema([]any{"pattern"}, "pattern", str("the literal text to find"), "path", str("the file or directory to search (default: the workspace)"), "max_results", map[string]any{"type": "integer", "minimum": 1, "maximum": maxResults})},
	}
	if writable {
		entries = append(entries,
			map[string]any{"name": "fs.write", "summary": "Write a whole text file in the workspace, creating its directories.",
				"input": objectSchema([]any{"path", "text"}, "path", pathField, "text", str("the file's whole new contents"))},
			map[string]any{"name": "fs.edit", "summary": "Replace text in a file in the workspace; old must occur exactly once.",
				"input": objectSchema([]any{"path", "old", "new"}, "path", pathField, "old", str("the text to replace, occurring exactly once"), "new", str("the replacement"))})
	}
	if len(programs) > 0 {
		enum := make([]any, len(programs))
		for i, p := range programs {
			enum[i] = p
		}
		entries = append(entries, map[string]any{"name": runEntry, "summary": "Run one declared program in the workspace with arguments (no shell): " + strings.Join(programs, ", ") + ".",
			"input": objectSchema([]any{"argv"}, "argv", map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1, "prefixItems": []any{map[string]any{"enum": enum}}, "description": "the program and its arguments"})})
	}
	return mustContract("the default entries", map[string]any{"format": ContractFormat, "entries": entries})
}

// objectSchema builds {"type":"object","properties":…,"required":…,
// "additionalProperties":false} with the properties in the order given.
func objectSchema(required []any, props ...any) *Object {
	p := &Object{}
	for i := 0; i+1 < len(props); i += 2 {
		p.Members = append(p.Members, Member{props[i].(string), props[i+1]})
	}
	s := &Object{Members: []Member{{"type", "object"}, {"properties", p}}}
	if required != nil {
		s.Members = append(s.Members, Member{"required", required})
	}
	s.Members = append(s.Members, Member{"additionalProperties", false})
	return s
}

func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

// mustContract checks a contract built in code through the loader.
func mustContract(source string, doc map[string]any) *Contract {
	c, err := ParseContract(source, appendJSON(nil, toTree(doc), "", false))
	if err != nil {
		panic(fmt.Sprintf("mcpserve: %s: %v", source, err))
	}
	return c
}

// toTree turns Go literals into the tree, with the keys of an entry and of
// the document in their conventional order.
func toTree(v any) any {
	switch v := v.(type) {
	case map[string]any:
		o := &Object{}
		for _, k := range []string{"format", "entries", "name", "summary", "input", "type", "description"} {
			if x, ok := v[k]; ok {
				o.Members = append(o.Members, Member{k, toTree(x)})
			}
		}
		rest := slices.Sorted(func(yield func(string) bool) {
			for k := range v {
				if _, done := o.Get(k); !done && !yield(k) {
					return
				}
			}
		})
		for _, k := range rest {
			o.Members = append(o.Members, Member{k, toTree(v[k])})
		}
		return o
	case *Object:
		o := &Object{}
		for _, m := range v.Members {
			o.Members = append(o.Members, Member{m.Key, toTree(m.Value)})
		}
		return o
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toTree(x)
		}
		return out
	case int:
		return Number(fmt.Sprint(v))
	}
	return v
}

// effects names what an entry may do, for tool_search's filter.
func effects(entry string) string {
	switch OperationOf(entry) {
	case "file.write", "file.edit":
		return "write"
	case "":
		if entry == runEntry {
			return "process"
		}
	}
	return "read"
}

func (s *Server) operationOf(entry string) string {
	if s.opts.Contract == nil && entry == runEntry {
		return runOperation
	}
	return OperationOf(entry)
}

type toolSummary struct {
	Name      string `json:"name"`
	Operation string `json:"operation"`
	Summary   string `json:"summary"`
	Effects   string `json:"effects"`
}

func (s *Server) toolSearch(a Arguments) (string, *CallError) {
	query, cerr := stringArg(verbSearch, a, "query", "")
	if cerr != nil {
		return "", cerr
	}
	effect, cerr := stringArg(verbSearch, a, "effect", "")
	if cerr != nil {
		return "", cerr
	}
	out := struct {
		Tools            []toolSummary `json:"tools"`
		Total            int           `json:"total,omitempty"`
		WithheldByFilter int           `json:"withheld_by_filter,omitempty"`
		Note             string        `json:"note,omitempty"`
	}{Tools: []toolSummary{}}
	for _, e := range s.entries.Entries {
		t := toolSummary{e.Name, s.operationOf(e.Name), e.Summary, effects(e.Name)}
		q := strings.ToLower(query)
		if (query == "" || strings.Contains(strings.ToLower(t.Name+" "+t.Operation+" "+t.Summary), q)) && (effect == "" || effect == t.Effects) {
			out.Tools = append(out.Tools, t)
		}
	}
	if hidden := len(s.entries.Entries) - len(out.Tools); hidden > 0 {
		out.Total, out.WithheldByFilter = len(s.entries.Entries), hidden
		out.Note = "the filter hid some tools; call tool_search without query and effect to list them all"
	}
	return pretty(out), nil
}

func (s *Server) toolDescribe(a Arguments) (string, *CallError) {
	name, cerr := stringArg(verbDescribe, a, "name", "")
	if cerr != nil {
		return "", cerr
	}
	e, cerr := s.defaultEntry(verbDescribe, name)
	if cerr != nil {
		return "", cerr
	}
	return pretty(struct {
		Name        string          `json:"name"`
		Operation   string          `json:"operation"`
		Summary     string          `json:"summary"`
		Effects     string          `json:"effects"`
		InputSchema json.RawMessage `json:"input_schema"`
	}{e.Name, s.operationOf(e.Name), e.Summary, effects(e.Name), e.inputJSON}), nil
}

func (s *Server) defaultEntry(verb, name string) (*Entry, *CallError) {
	if e, ok := s.entries.Entry(name); ok {
		return e, nil
	}
	names := make([]string, len(s.entries.Entries))
	for i, e := range s.entries.Entries {
		names[i] = e.Name
	}
	return nil, callErr(verb, "name", "%q is not a tool this server has. Available: %s", name, strings.Join(names, ", "))
}

// runOutputLimit bounds each of a program's captured streams.
const runOutputLimit = 1 << 20

// runProgram performs the run entry: argv[0] must be a declared program,
// started without a shell in the workspace; nothing runs otherwise.
func (s *Server) runProgram(ctx context.Context, a Arguments) (string, *CallError) {
	raw, _ := a.Get("argv")
	var argv []any
	if err := json.Unmarshal(raw, &argv); err != nil || len(argv) == 0 {
		return "", callErr(runEntry, "argv", "must be a non-empty list of strings; nothing was run")
	}
	args := make([]string, len(argv))
	for i, x := range argv {
		str, ok := x.(string)
		if !ok {
			return "", callErr(runEntry, fmt.Sprintf("argv[%d]", i), "is not a string; nothing was run")
		}
		args[i] = str
	}
	if !slices.Contains(s.opts.AllowPrograms, args[0]) {
		return "", callErr(runEntry, "argv[0]", "%q is not a declared program (declared: %s); nothing was run", args[0], strings.Join(s.opts.AllowPrograms, ", "))
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = s.ws.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdout, stderr := &capped{limit: runOutputLimit}, &capped{limit: runOutputLimit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			return "", callErr(runEntry, "argv[0]", "%q could not be started: %v", args[0], err)
		}
		code = ee.ExitCode()
	}
	return pretty(map[string]any{
		"exit_code": code, "stdout": stdout.String(), "stderr": stderr.String(),
		"truncated": stdout.dropped || stderr.dropped,
	}), nil
}

// capped keeps the first limit bytes written to it.
type capped struct {
	bytes.Buffer
	limit   int
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.limit - c.Len()
	if room < len(p) {
		c.dropped = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// checkPrograms refuses a program list the run entry could not honour.
func checkPrograms(programs []string, writable bool) error {
	if len(programs) > 0 && !writable {
		return exit.Refuse("allow-program-needs-writable", "--allow-program %s without --writable: a program can write anything in the workspace, which a read-only server promises not to; add --writable or drop --allow-program", programs[0])
	}
	for _, p := range programs {
		if strings.TrimSpace(p) == "" || strings.ContainsRune(p, 0) {
			return exit.Refuse("usage", "--allow-program %q names no program; give a program name or path", p)
		}
	}
	return nil
}
