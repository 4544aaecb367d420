package mcpserve

import (
	"encoding/json"
)

// operations is the fixed table from an entry this build performs to its
// neutral operation (SPEC §7.2), so that a finished record can be read
// without the live catalogue.
var operations = map[string]string{
	"fs.read":   "file.read",
	"fs.list":   "dir.list",
	"fs.search": "search",
	"fs.write":  "file.write",
	"fs.edit":   "file.edit",
}

// runEntry is the default surface's program runner. It exists only behind
// tool_invoke, only when programs are declared, and never beside a contract.
const (
	runEntry     = "run"
	runOperation = "shell"
)

// OperationOf is the operation of a contract entry, "" when this build
// performs no such entry (a frame then denies it as UNCOVERED_TOOL).
func OperationOf(entry string) string { return operations[entry] }

// Subjects are what a call acts on, for frames and records: file:<path as
// written> (default ".") for the fs entries, proc:<argv[0]> for run, none
// otherwise. Paths are never canonicalised: the record shows what the model
// asked for.
func Subjects(entry string, input json.RawMessage) []string {
	var args map[string]json.RawMessage
	if json.Unmarshal(input, &args) != nil {
		args = nil
	}
	if entry == runEntry {
		var argv []any
		if json.Unmarshal(args["argv"], &argv) == nil && len(argv) > 0 {
			if p, ok := argv[0].(string); ok {
				return []string{"proc:" + p}
			}
		}
		return []string{}
	}
	if OperationOf(entry) == "" {
		return []string{}
	}
	path := "."
	var p string
	if json.Unmarshal(args["path"], &p) == nil && p != "" {
		path = p
	}
	return []string{"file:" + path}
}

// Call is a tool call resolved for frames and records.
type Call struct {
	// Tool is the published name, without any mcp__<server>__ prefix.
	Tool string
	// Entry is the contract entry the call reaches, "" when none (an
	// unknown tool, or tool_search / tool_describe).
	Entry string
	// Operation is the entry's operation, "" when none.
	Operation string
	// Subjects as Subjects gives them.
	Subjects []string
	// Catalogue marks tool_search and tool_describe: they read the
	// catalogue and act on nothing.
	Catalogue bool
	// Input is the entry's own input (for tool_invoke, its arguments).
	Input json.RawMessage
}
