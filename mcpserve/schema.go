package mcpserve

import (
	"github.com/invopop/jsonschema"

	"github.com/metaharness/metaharness/record"
)

// ContractSchemaFile is the published schema's file name under schemas/.
const ContractSchemaFile = "tool-contract.schema.json"

// ToolContract is the shape of a tool contract document (SPEC §7.1), for its
// published JSON Schema; the loader reads the document itself, keeping the
// input schemas as written.
type ToolContract struct {
	Format  string          `json:"format" jsonschema:"enum=metaharness.tool-contract/1"`
	Entries []ContractEntry `json:"entries" jsonschema_description:"The tools. Two entries may not be published under one name."`
}

// ContractEntry is one tool of a contract.
type ContractEntry struct {
	Name       string             `json:"name" jsonschema_description:"Unique. An entry this build performs (fs.read, fs.list, fs.search, fs.write, fs.edit) is performed; any other resolves to no operation."`
	Summary    string             `json:"summary" jsonschema:"minLength=1" jsonschema_description:"The tool's description as published; not blank."`
	Input      ContractInput      `json:"input" jsonschema_description:"A JSON Schema whose root is an object; a call may give only the keys under properties."`
	Renderings *ContractRendering `json:"renderings,omitempty"`
}

// ContractInput is the root of an entry's input schema: any JSON Schema
// keywords, with these constrained.
type ContractInput struct {
	Type                 string         `json:"type" jsonschema:"enum=object"`
	Properties           map[string]any `json:"properties,omitempty"`
	Required             []string       `json:"required,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"Each a key of properties."`
	AdditionalProperties *bool          `json:"additionalProperties,omitempty" jsonschema_description:"Only false: the server refuses every key not under properties."`
}

// ContractRendering names an entry per rendering.
type ContractRendering struct {
	MCP string `json:"mcp,omitempty" jsonschema_description:"The name published over MCP; default: the entry's name with '.' turned into '_'."`
}

// ContractSchema is the JSON Schema of a tool contract, as checked in under
// schemas/. The document and its entries admit no other keys; an input
// schema admits any other keyword.
func ContractSchema() ([]byte, error) {
	s := record.ReflectDocument(&ToolContract{}, ContractSchemaFile,
		"A metaharness.tool-contract/1 document (YAML or JSON, at most 4 MiB, UTF-8).")
	for _, name := range []string{"ToolContract", "ContractEntry", "ContractRendering"} {
		s.Definitions[name].AdditionalProperties = jsonschema.FalseSchema
	}
	// The loader's own patterns (a tag cannot carry a comma).
	prop := func(def, name string) *jsonschema.Schema {
		p, _ := s.Definitions[def].Properties.Get(name)
		return p
	}
	prop("ContractEntry", "name").Pattern = entryNamePattern().String()
	prop("ContractRendering", "mcp").Pattern = publishedNamePattern().String()
	prop("ContractInput", "additionalProperties").Const = false
	return record.MarshalSchema(s)
}
