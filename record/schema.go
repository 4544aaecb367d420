package record

import (
	"bytes"
	"encoding/json"

	"github.com/invopop/jsonschema"
)

// SchemaBase is the $id prefix of every schema metaharness publishes.
const SchemaBase = "https://metaharness.dev/schemas/"

// EventSchema is the JSON Schema of one event line: a oneOf over the twenty
// events, each its payload plus the header keys.
func EventSchema() ([]byte, error) {
	var arms []arm
	for _, name := range EventNames {
		arms = append(arms, arm{name: name, payload: newEvent(name), header: eventHeader(name)})
	}
	return lineSchema("event.schema.json", "One metaharness.event/1 line.", arms)
}

// CommandSchema is the JSON Schema of one command line.
func CommandSchema() ([]byte, error) {
	var arms []arm
	for _, name := range CommandNames {
		arms = append(arms, arm{name: name, payload: newCommand(name), header: commandHeader(name)})
	}
	return lineSchema("command.schema.json", "One metaharness.command/1 line.", arms)
}

type arm struct {
	name    string
	payload any
	header  []prop
}

type prop struct {
	name     string
	schema   *jsonschema.Schema
	required bool
}

func eventHeader(name string) []prop {
	return []prop{
		{"format", &jsonschema.Schema{Const: EventFormat}, true},
		{"seq", &jsonschema.Schema{Type: "integer", Minimum: json.Number("1")}, true},
		{"run", &jsonschema.Schema{Type: "string"}, true},
		{"at", &jsonschema.Schema{Type: "string", Description: "the vendor's own timestamp, verbatim; absent when the vendor gave none"}, false},
		{"event", &jsonschema.Schema{Const: name}, true},
	}
}

func commandHeader(name string) []prop {
	return []prop{
		{"format", &jsonschema.Schema{Const: CommandFormat}, true},
		{"id", &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1))}, true},
		{"command", &jsonschema.Schema{Const: name}, true},
	}
}

func ptr[T any](v T) *T { return &v }

// lineSchema builds a schema whose $defs hold one definition per arm, each
// the header keys followed by the payload's own properties.
func lineSchema(id, title string, arms []arm) ([]byte, error) {
	root := &jsonschema.Schema{
		Version:     jsonschema.Version,
		ID:          jsonschema.ID(SchemaBase + id),
		Title:       title,
		Definitions: jsonschema.Definitions{},
	}
	for _, a := range arms {
		s := Reflect(a.payload)
		for name, def := range s.Definitions {
			root.Definitions[name] = def
		}
		line := &jsonschema.Schema{
			Type:       "object",
			Properties: jsonschema.NewProperties(),
		}
		for _, h := range a.header {
			line.Properties.Set(h.name, h.schema)
			if h.required {
				line.Required = append(line.Required, h.name)
			}
		}
		body := s
		if s.Ref != "" {
			body = root.Definitions[refName(s.Ref)]
			delete(root.Definitions, refName(s.Ref)) // inlined into the line
		}
		for p := body.Properties.Oldest(); p != nil; p = p.Next() {
			line.Properties.Set(p.Key, p.Value)
		}
		line.Required = append(line.Required, body.Required...)
		root.Definitions[a.name] = line
		root.OneOf = append(root.OneOf, &jsonschema.Schema{Ref: "#/$defs/" + a.name})
	}
	return MarshalSchema(root)
}

func refName(ref string) string { return ref[len("#/$defs/"):] }

// Reflect builds a schema from a Go value's type the same way for every
// document metaharness publishes: fields tagged nullable accept null, extra
// properties are allowed (readers ignore unknown fields).
func Reflect(v any) *jsonschema.Schema {
	r := &jsonschema.Reflector{AllowAdditionalProperties: true}
	s := r.Reflect(v)
	s.Version = ""
	s.ID = ""
	return s
}

// ReflectDocument is Reflect for the root of a document published as
// schemas/file: with its $schema version, its $id and its title.
func ReflectDocument(v any, file, title string) *jsonschema.Schema {
	s := Reflect(v)
	s.Version = jsonschema.Version
	s.ID = jsonschema.ID(SchemaBase + file)
	s.Title = title
	return s
}

// MarshalSchema renders a schema as indented JSON with a trailing newline,
// the form checked in under schemas/.
func MarshalSchema(s *jsonschema.Schema) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
