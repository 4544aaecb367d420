// Package schemacheck holds the lines tests write to the schemas metaharness
// publishes (schemas/event.schema.json and schemas/command.schema.json, as
// record generates them; record's drift test holds the checked-in files to
// the same bytes), and a run's statement to schemas/run-statement.schema.json
// (Statement). A test binary calls Install once, from an init of a test
// file: from then on every line record.EncodeEvent or EncodeCommand renders
// in that process (each line any record.Writer writes) is validated, so a
// field whose Go type and schema disagree fails the tests that write it.
//
// Only tests import it; the release binary carries record's hook empty.
package schemacheck

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/provenance"
	"github.com/metaharness/metaharness/record"
)

// compiler holds both line schemas; arms are compiled from it on demand.
var compiler = sync.OnceValues(func() (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	for _, build := range []func() ([]byte, error){record.EventSchema, record.CommandSchema} {
		raw, err := build()
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, doc); err != nil {
			return nil, err
		}
	}
	return c, nil
})

var (
	mu    sync.Mutex
	arms  = map[string]*jsonschema.Schema{}
	files = map[string]string{record.EventFormat: "event.schema.json", record.CommandFormat: "command.schema.json"}
)

// arm is the schema of one event or command name: the line schema's
// definition of it, so that a fault is reported against that alone rather
// than as every arm of the oneOf failing; the whole line schema when the
// name is not one.
func arm(file, name string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	loc := record.SchemaBase + file
	if name != "" {
		loc += "#/$defs/" + name
	}
	if s, ok := arms[loc]; ok {
		return s, nil
	}
	c, err := compiler()
	if err != nil {
		return nil, err
	}
	s, err := c.Compile(loc)
	if err != nil && name != "" {
		return arm(file, "")
	}
	if err != nil {
		return nil, err
	}
	arms[loc] = s
	return s, nil
}

// Line validates one event or command line against its published schema.
func Line(line []byte) error {
	var format, name []byte
	if err := jsonscan.Members(bytes.TrimSpace(line), func(key, val []byte) {
		switch string(key) {
		case "format":
			format = bytes.Clone(val)
		case "event", "command":
			name = bytes.Clone(val)
		}
	}); err != nil {
		return fmt.Errorf("the line is not one JSON object: %w", err)
	}
	tag, err := jsonscan.String(format)
	if err != nil {
		return errors.New("the line has no format tag")
	}
	file, ok := files[tag]
	if !ok {
		return fmt.Errorf("the line's format %q has no published schema", tag)
	}
	n, _ := jsonscan.String(name)
	s, err := arm(file, n)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return err
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("it does not match schemas/%s: %w", file, err)
	}
	return nil
}

// Install makes every line record renders in this process go through
// Line. onFail hears of each line that does not pass; nil panics, naming
// the line and the fault, which fails the test that wrote it (or the whole
// test binary, from another goroutine: loudly either way).
func Install(onFail func(line []byte, err error)) {
	if onFail == nil {
		onFail = func(line []byte, err error) {
			panic(fmt.Sprintf("schemacheck: a line written in this test does not match the published schema: %v\n%s", err, line))
		}
	}
	record.SetLineCheck(func(line []byte) {
		if err := Line(line); err != nil {
			onFail(line, err)
		}
	})
}

// statementSchema is schemas/run-statement.schema.json, as provenance
// generates it (its drift test holds the checked-in file to the same bytes).
var statementSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	raw, err := provenance.Schema()
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(record.SchemaBase+provenance.SchemaFile, doc); err != nil {
		return nil, err
	}
	return c.Compile(record.SchemaBase + provenance.SchemaFile)
})

// Statement validates the statement in a DSSE envelope, as run --statement
// writes it, against its published schema.
func Statement(envelope []byte) error {
	var env struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal(envelope, &env); err != nil {
		return fmt.Errorf("the envelope is not JSON: %w", err)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return fmt.Errorf("the envelope's payload is not base64: %w", err)
	}
	s, err := statementSchema()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("the payload is not JSON: %w", err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("the statement does not match schemas/%s: %w", provenance.SchemaFile, err)
	}
	return nil
}
