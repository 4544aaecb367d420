package kind

import (
	"encoding/json"
	"strings"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/mcpserve"
)

// NativeOp is a native tool's row of a kind's rendering table read
// backwards: the operation the tool performs and the input key naming its
// subject ("" for none).
type NativeOp struct{ Op, Key string }

// Resolver is a kind's Resolve made of its parts: a call of the owned
// server's (its name after ownedPrefix) resolves through the contract, one
// of another MCP server's (as mcpTool splits its name) to mcp.call, a
// native one through the table. Anything else resolves to nothing, which a
// frame denies as uncovered.
func Resolver(cat *mcpserve.Contract, ownedPrefix string, mcpTool func(string) (server, tool string, ok bool), native map[string]NativeOp) func(string, json.RawMessage) frame.Resolution {
	return func(tool string, input json.RawMessage) frame.Resolution {
		if published, ok := strings.CutPrefix(tool, ownedPrefix); ok {
			return ResolveEntry(cat, published, input)
		}
		if server, name, ok := mcpTool(tool); ok {
			return frame.Resolution{Operations: []frame.Operation{{Op: frame.MCPCall, Server: server, Tool: name}}}
		}
		n, ok := native[tool]
		if !ok {
			return frame.Resolution{}
		}
		res := frame.Resolution{Operations: []frame.Operation{{Op: n.Op}}}
		if n.Key != "" {
			res.Subjects = nativeSubject(n.Op, n.Key, input)
		}
		return res
	}
}

// ResolveEntry resolves a call of the catalogue's entry published through
// the contract: its operation and subjects; nothing without a contract, an
// entry of that name or an operation.
func ResolveEntry(cat *mcpserve.Contract, published string, input json.RawMessage) frame.Resolution {
	if cat == nil {
		return frame.Resolution{}
	}
	e, ok := cat.Lookup(published)
	if !ok {
		return frame.Resolution{}
	}
	op := mcpserve.OperationOf(e.Name)
	if op == "" {
		return frame.Resolution{}
	}
	return frame.Resolution{Operations: []frame.Operation{{Op: op}}, Subjects: mcpserve.Subjects(e.Name, input)}
}

// nativeSubject names what a native call acts on, as the model wrote it:
// file:<path> for file tools (file:. for a listing or search of the cwd),
// proc:<first word> for the shell.
func nativeSubject(op, key string, input json.RawMessage) []string {
	var args map[string]json.RawMessage
	if json.Unmarshal(input, &args) != nil {
		return nil
	}
	var v string
	if json.Unmarshal(args[key], &v) != nil || v == "" {
		if op == "dir.list" || op == "search" {
			return []string{"file:."}
		}
		return nil
	}
	if op == "shell" {
		if f := strings.Fields(v); len(f) > 0 {
			return []string{"proc:" + f[0]}
		}
		return nil
	}
	return []string{"file:" + v}
}
