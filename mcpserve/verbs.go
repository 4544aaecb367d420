package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
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
// arguments go through the same checks as any entry's; built on first use,
// so that no other verb pays for it at start-up.
var verbs = sync.OnceValue(func() *Contract {
	return mustContract("the default verbs",
		entry(verbSearch, "List the tools this server performs behind tool_invoke: name, operation, summary and effects. query keeps those whose name, operation or summary contains it; effect keeps those with that effect (read, write or process).",
			objectSchema(nil, "query", str("a substring of name, operation or summary"), "effect", obj("type", "string", "enum", []any{"read", "write", "process"}))),
		entry(verbDescribe, "Describe one tool behind tool_invoke: its operation, summary, effects and input schema.",
			objectSchema([]any{"name"}, "name", str("the tool's name, as tool_search lists it"))),
		entry(verbInvoke, "Call one tool behind tool_invoke with its arguments (an object, as tool_describe's input_schema says).",
			objectSchema([]any{"name", "arguments"}, "name", str("the tool's name, as tool_search lists it"), "arguments", obj("type", "object", "description", "the tool's arguments"))),
	)
})

// Verbs are the names the default surface publishes, in order.
func Verbs() []string { return []string{verbSearch, verbDescribe, verbInvoke} }

// Operations lists, once each and in order, the operations the default
// verbs perform behind tool_invoke for a server with these options (a
// contract's entries are not consulted: it publishes no verbs).
func (o Options) Operations() []string {
	var ops []string
	for _, e := range defaultEntries(o.Writable, o.AllowPrograms).Entries {
		if op := defaultOperation(e.Name); !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	return ops
}

// defaultEntries builds the entries behind tool_invoke from what the server
// admits: reads always, writes only when writable, run only when programs
// are declared (its first argument is then one of them).
func defaultEntries(writable bool, programs []string) *Contract {
	pathField := str("a path relative to the workspace")
	entries := []*Object{
		entry("fs.read", "Read a text file in the workspace.",
			objectSchema([]any{"path"}, "path", pathField, "max_bytes", obj("type", "integer", "minimum", number(1), "maximum", number(maxReadBytes), "description", fmt.Sprintf("read at most this many bytes (default %d)", defaultReadBytes)))),
		entry("fs.list", "List a directory in the workspace (default: its root).",
			objectSchema(nil, "path", pathField)),
		entry("fs.search", "Find lines holding a literal text in the workspace's files, skipping version-control and dependency trees.",
			objectSchema([]any{"pattern"}, "pattern", str("the literal text to find"), "path", str("the file or directory to search (default: the workspace)"), "max_results", obj("type", "integer", "minimum", number(1), "maximum", number(maxResults)))),
	}
	if writable {
		entries = append(entries,
			entry("fs.write", "Write a whole text file in the workspace, creating its directories.",
				objectSchema([]any{"path", "text"}, "path", pathField, "text", str("the file's whole new contents"))),
			entry("fs.edit", "Replace text in a file in the workspace; old must occur exactly once.",
				objectSchema([]any{"path", "old", "new"}, "path", pathField, "old", str("the text to replace, occurring exactly once"), "new", str("the replacement"))))
	}
	if len(programs) > 0 {
		enum := make([]any, len(programs))
		for i, p := range programs {
			enum[i] = p
		}
		entries = append(entries, entry(runEntry, "Run one declared program in the workspace with arguments (no shell): "+strings.Join(programs, ", ")+".",
			objectSchema([]any{"argv"}, "argv", obj("type", "array", "items", obj("type", "string"), "minItems", number(1), "prefixItems", []any{obj("enum", enum)}, "description", "the program and its arguments"))))
	}
	return mustContract("the default entries", entries...)
}

// obj builds an object from keys and values in order.
func obj(kv ...any) *Object {
	o := &Object{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Members = append(o.Members, Member{kv[i].(string), kv[i+1]})
	}
	return o
}

func number(n int) Number { return Number(fmt.Sprint(n)) }

func str(description string) *Object { return obj("type", "string", "description", description) }

func entry(name, summary string, input *Object) *Object {
	return obj("name", name, "summary", summary, "input", input)
}

// objectSchema builds {"type":"object","properties":…,"required":…,
// "additionalProperties":false} with the properties in the order given.
func objectSchema(required []any, props ...any) *Object {
	s := obj("type", "object", "properties", obj(props...))
	if required != nil {
		s.Members = append(s.Members, Member{"required", required})
	}
	s.Members = append(s.Members, Member{"additionalProperties", false})
	return s
}

// mustContract checks a contract built in code through the loader, as
// JSON text, the way a caller's would be.
func mustContract(source string, entries ...*Object) *Contract {
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = e
	}
	doc := obj("format", ContractFormat, "entries", list)
	c, err := ParseContract(source, appendJSON(nil, doc, "", false))
	if err != nil {
		panic(fmt.Sprintf("mcpserve: %s: %v", source, err))
	}
	return c
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
	if s.opts.Contract == nil {
		return defaultOperation(entry)
	}
	return OperationOf(entry)
}

// defaultOperation is the operation of an entry behind tool_invoke: the
// run entry, which no contract may declare, starts a program.
func defaultOperation(entry string) string {
	if entry == runEntry {
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

// CheckPrograms refuses a program list the run entry could not honour:
// programs on a read-only server, or a name that names no program.
func CheckPrograms(programs []string, writable bool) error {
	if len(programs) > 0 && !writable {
		return exit.Refuse(RefuseAllowProgramNeedsWritable, "--allow-program %s without --writable: a program can write anything in the workspace, which a read-only server promises not to; add --writable or drop --allow-program", programs[0])
	}
	for _, p := range programs {
		if strings.TrimSpace(p) == "" || strings.ContainsRune(p, 0) {
			return exit.Refuse(exit.RefuseUsage, "--allow-program %q names no program; give a program name or path", p)
		}
	}
	return nil
}
