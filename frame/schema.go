package frame

import (
	"github.com/invopop/jsonschema"

	"github.com/metaharness/metaharness/record"
)

// schemaDocument is a frame document as a file holds it.
type schemaDocument struct {
	Format string `json:"format" jsonschema:"const=metaharness.frame/1"`
	Digest string `json:"digest" jsonschema:"pattern=^[0-9a-f]{64}$"`
	Document
}

// JSONSchemaExtend lists the closed operation vocabulary in the schema.
func (Operation) JSONSchemaExtend(s *jsonschema.Schema) {
	if op, ok := s.Properties.Get("op"); ok {
		for _, o := range record.Operations {
			op.Enum = append(op.Enum, o)
		}
	}
}

// JSONSchemaExtend names the three handoff variants.
func (Handoff) JSONSchemaExtend(s *jsonschema.Schema) {
	if h, ok := s.Properties.Get("handoff"); ok {
		h.Enum = []any{HandoffNone, HandoffArtifact, HandoffStructuredAnswer}
	}
	if sc, ok := s.Properties.Get("schema"); ok {
		sc.Type = "object"
		sc.Description = "the structured answer's JSON Schema (structured_answer only)"
	}
}

// Schema is the JSON Schema of a frame document, checked in as
// schemas/frame.schema.json. Objects are closed: the loader refuses a key it
// does not know rather than ignore a restriction it cannot read.
func Schema() ([]byte, error) {
	reflected := record.Reflect(&schemaDocument{})
	defs := reflected.Definitions
	root := defs["schemaDocument"] // the document itself is the root, not a $ref
	delete(defs, "schemaDocument")
	root.Version = jsonschema.Version
	root.ID = jsonschema.ID(record.SchemaBase + "frame.schema.json")
	root.Title = "One " + Format + " document."
	root.Definitions = defs
	if f, ok := root.Properties.Get("format"); ok {
		f.Const = Format
	}
	if step := defs["StepRef"]; step != nil {
		if a, ok := step.Properties.Get("attempt"); ok {
			a.Minimum = "1"
		}
		if i, ok := step.Properties.Get("index"); ok {
			i.Minimum = "0"
		}
	}
	closeObjects(root)
	for _, d := range defs {
		closeObjects(d)
	}
	return record.MarshalSchema(root)
}

func closeObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Properties != nil && s.Properties.Len() > 0 {
		s.AdditionalProperties = jsonschema.FalseSchema
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			if p.Key != "schema" {
				closeObjects(p.Value)
			}
		}
	}
	closeObjects(s.Items)
}
