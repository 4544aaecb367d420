package mcpserve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// A contract's entries performed in a workspace, each call put to a
// decider first (here one that admits reading and nothing else), and held
// to the entry's input fields before anything is done.
func Example() {
	contract, err := mcpserve.ParseContract("tools.yaml", []byte(`
format: metaharness.tool-contract/1
entries:
  - name: fs.read
    summary: Read a text file in the workspace.
    input: {type: object, properties: {path: {type: string}}, required: [path]}
    renderings: {mcp: read_file}
  - name: fs.write
    summary: Write a text file in the workspace.
    input: {type: object, properties: {path: {type: string}, text: {type: string}}, required: [path, text]}
`))
	if err != nil {
		panic(err)
	}
	workspace, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(workspace)
	_ = os.WriteFile(filepath.Join(workspace, "notes.md"), []byte("the release is on Friday\n"), 0o600)

	readOnly := decide.AskerFunc(func(_ context.Context, req decide.Request) (record.Decision, error) {
		if req.Operation == "file.read" {
			return record.AllowDecision(), nil
		}
		return record.DenyDecision(req.Operation + " is not admitted here"), nil
	})
	srv, err := mcpserve.NewServer(mcpserve.Options{Contract: contract, Workspace: workspace, Writable: contract.Writes(), Asker: readOnly})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	for _, call := range []struct{ tool, args string }{
		{"read_file", `{"path":"notes.md"}`},
		{"fs_write", `{"path":"notes.md","text":"moved"}`},
		{"read_file", `{"path":"notes.md","mode":"x"}`},
	} {
		text, isErr, err := srv.Call(context.Background(), call.tool, []byte(call.args), "")
		fmt.Printf("%s error=%t: %q %v\n", call.tool, isErr, text, err)
	}
	// Output:
	// read_file error=false: "the release is on Friday\n" <nil>
	// fs_write error=true: "fs.write: was denied: file.write is not admitted here; nothing was done" <nil>
	// read_file error=true: "fs.read: field \"mode\" is not one of its input fields (path); nothing was done" <nil>
}
