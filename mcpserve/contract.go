package mcpserve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// ContractFormat is the format tag every tool contract carries.
const ContractFormat = "metaharness.tool-contract/1"

// MaxContractBytes bounds a tool contract file and its scratch copy (4 MiB).
const MaxContractBytes = 4 << 20

// Refusal names: a catalogue's, spelled as the seed spells them, then
// mcp-serve's own.
const (
	RefuseUnreadable                 exit.Name = "catalogue-unreadable"
	RefuseNotToolContract            exit.Name = "catalogue-not-tool-contract"
	RefuseMalformed                  exit.Name = "catalogue-malformed"
	RefuseCopyDiffers                exit.Name = "catalogue-copy-differs"
	RefuseNotCarried                 exit.Name = "catalogue-not-carried"
	RefuseNeedsOwnedSurface          exit.Name = "catalogue-needs-owned-surface"
	RefuseWithAllowProgram           exit.Name = "catalogue-with-allow-program"
	RefuseNameReserved               exit.Name = "catalogue-name-reserved"
	RefuseNameTooLong                exit.Name = "catalogue-name-too-long"
	RefuseCatalogueEntryNotPerformed exit.Name = "catalogue-entry-not-performed"

	RefuseWorkspaceUnusable         exit.Name = "workspace-unusable"
	RefuseHTTPNotLoopback           exit.Name = "http-not-loopback"
	RefuseDecisionsSocketUnusable   exit.Name = "decisions-socket-unusable"
	RefuseAllowProgramNeedsWritable exit.Name = "allow-program-needs-writable"
)

const (
	contractFixRemedy  = "fix the tool contract (format " + ContractFormat + ", see schemas/tool-contract.schema.json)"
	publishedNameRules = "^[A-Za-z0-9_-]{1,64}$"
)

// The name rules as published in the contract's schema (schema.go); a
// contract's names are checked by isEntryName and isPublishedName, which
// read them a byte at a time (a thousand entries' worth of regexp matches
// was a tenth of loading them), held to these by TestNameChecksReadThePatterns.
var (
	entryNamePattern     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`) })
	publishedNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(publishedNameRules) })
)

// isEntryName is entryNamePattern: [a-z][a-z0-9_.-]*.
func isEntryName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// isPublishedName is publishedNamePattern: [A-Za-z0-9_-]{1,64}.
func isPublishedName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Contract is a checked tool contract: the document as read (what the
// scratch copy reproduces) and its entries.
type Contract struct {
	// Source names where the contract was read from, for messages.
	Source  string
	Entries []*Entry

	doc         *Object
	byPublished map[string]*Entry
}

// Entry is one tool of a contract.
type Entry struct {
	Name    string
	Summary string
	// Input is the entry's input schema as written; its root is
	// {"type":"object"}.
	Input *Object
	// Rendering is renderings.mcp as written, "" when it was left to the
	// default.
	Rendering string

	fields    []string // the keys of input.properties, in order
	required  []string // input.required
	inputJSON []byte   // Input as compact JSON, what tools/list publishes
}

// Published is the name the entry is published under over MCP: its mcp
// rendering, or its name with '.' turned into '_'.
func (e *Entry) Published() string {
	if e.Rendering != "" {
		return e.Rendering
	}
	return strings.ReplaceAll(e.Name, ".", "_")
}

// Fields lists the entry's input fields (the keys of input.properties).
func (e *Entry) Fields() []string { return e.fields }

// Required lists the fields the entry requires.
func (e *Entry) Required() []string { return e.required }

// InputSchema is the input schema as compact JSON.
func (e *Entry) InputSchema() []byte { return e.inputJSON }

// Lookup finds an entry by its published name.
func (c *Contract) Lookup(published string) (*Entry, bool) {
	e, ok := c.byPublished[published]
	return e, ok
}

// Entry finds an entry by its name.
func (c *Contract) Entry(name string) (*Entry, bool) {
	for _, e := range c.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return nil, false
}

// Published lists the names the entries are published under, in order.
func (c *Contract) Published() []string {
	out := make([]string, 0, len(c.Entries))
	for _, e := range c.Entries {
		out = append(out, e.Published())
	}
	return out
}

// Writes reports whether an entry writes (file.write, file.edit): a server
// for the contract must then be allowed to write beneath its workspace,
// where the frame still decides each call.
func (c *Contract) Writes() bool {
	for _, e := range c.Entries {
		if op := OperationOf(e.Name); op == "file.write" || op == "file.edit" {
			return true
		}
	}
	return false
}

// Operations lists, once each and in the entries' order, the operations
// the contract's performed entries resolve to.
func (c *Contract) Operations() []string {
	ops := []string{}
	for _, e := range c.Entries {
		if op := OperationOf(e.Name); op != "" && !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	return ops
}

// Unperformed lists the entries this build performs none of: they resolve
// to no operation, so every call to one fails.
func (c *Contract) Unperformed() []*Entry {
	var out []*Entry
	for _, e := range c.Entries {
		if OperationOf(e.Name) == "" {
			out = append(out, e)
		}
	}
	return out
}

// Equal reports whether two contracts hold the same document, and where
// they first differ when they do not.
func (c *Contract) Equal(o *Contract) (bool, string) {
	return equalValue(c.doc, o.doc, "")
}

// LoadContract reads and checks the tool contract at path (SPEC §7.1). Every
// failure is an *exit.Refusal named with the seed's code.
func LoadContract(path string) (*Contract, error) {
	data, err := readContractFile(path)
	if err != nil {
		return nil, err
	}
	return ParseContract(path, data)
}

// readContractFile reads at most MaxContractBytes of a regular file,
// refusing a named pipe rather than waiting on it (internal/inputfile).
func readContractFile(path string) ([]byte, error) {
	data, err := inputfile.Read(path, MaxContractBytes)
	switch {
	case errors.Is(err, inputfile.ErrNotRegular):
		return nil, exit.Within(RefuseUnreadable, err, "the tool contract %v; pass the tool contract's file itself", err)
	case errors.Is(err, inputfile.ErrTooLarge):
		return nil, exit.Within(RefuseUnreadable, err, "the tool contract %v; split the contract or trim its schemas", err)
	case err != nil:
		return nil, exit.Within(RefuseUnreadable, err, "the tool contract %v; pass the path of a readable tool contract file", err)
	}
	return data, nil
}

var bom = []byte("\xef\xbb\xbf")

// ParseContract checks the bytes of a tool contract read from source: the
// size limit, a leading byte-order mark dropped, UTF-8, then the document.
func ParseContract(source string, data []byte) (c *Contract, err error) {
	if len(data) > MaxContractBytes {
		return nil, exit.Refuse(RefuseUnreadable, "the tool contract %s is %d bytes, past the 4 MiB (%d bytes) limit; split the contract or trim its schemas", source, len(data), MaxContractBytes)
	}
	data = bytes.TrimPrefix(data, bom)
	if !utf8.Valid(data) {
		off := firstInvalidUTF8(data)
		return nil, exit.Refuse(RefuseUnreadable, "the tool contract %s is not UTF-8 (invalid byte 0x%02x at offset %d); save it as UTF-8", source, data[off], off)
	}
	doc, err := parseTree(data)
	if err != nil {
		if errors.Is(err, errBudget) {
			return nil, exit.Refuse(RefuseMalformed, "the tool contract %s would make a scratch copy past 4 MiB (its YAML aliases written out in full); make it smaller or use fewer aliases", source)
		}
		return nil, exit.Refuse(RefuseMalformed, "the tool contract %s does not parse as YAML or JSON: %v; %s", source, err, contractFixRemedy)
	}
	return contractFromTree(source, doc)
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return 0
}

// parseTree reads exactly one YAML (or JSON) document into the tree: JSON
// through jsonTree when it can, else through the YAML parser.
func parseTree(data []byte) (any, error) {
	if v, ok := jsonTree(data); ok {
		return v, nil
	}
	return yamlTree(data)
}

func yamlTree(data []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil { // a YAML parser bug must not end the verb
			err = fmt.Errorf("the YAML reader failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var node yaml.Node
	if err := dec.Decode(&node); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty: not a tool contract
		}
		return nil, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: a second YAML document; a tool contract is one document", more.Line)
	}
	b := &treeBuilder{budget: MaxContractBytes, expanding: map[*yaml.Node]bool{}}
	return b.value(&node)
}

// contractFromTree checks the document's shape (SPEC §7.1).
func contractFromTree(source string, doc any) (*Contract, error) {
	root, ok := doc.(*Object)
	if !ok {
		return nil, exit.Refuse(RefuseNotToolContract, "%s is not a tool contract: it is %s, not a mapping with format: %s; pass a tool contract", source, describeValue(doc), ContractFormat)
	}
	format, ok := root.Get("format")
	if !ok {
		return nil, exit.Refuse(RefuseNotToolContract, "%s is not a tool contract: it has no format key (want format: %s); pass a tool contract", source, ContractFormat)
	}
	if format != ContractFormat {
		return nil, exit.Refuse(RefuseNotToolContract, "%s is not a tool contract: its format is %s, not %s; pass a tool contract", source, describeValue(format), ContractFormat)
	}
	malformed := func(where, format string, args ...any) error {
		return exit.Refuse(RefuseMalformed, "the tool contract %s: %s: %s; %s", source, where, fmt.Sprintf(format, args...), contractFixRemedy)
	}
	for _, m := range root.Members {
		if m.Key != "format" && m.Key != "entries" {
			return nil, malformed(m.Key, "unknown key (a contract has format and entries)")
		}
	}
	rawEntries, ok := root.Get("entries")
	if !ok {
		return nil, malformed("entries", "missing (list the tools, even as entries: [])")
	}
	list, ok := rawEntries.([]any)
	if !ok {
		return nil, malformed("entries", "is %s, not a list", describeValue(rawEntries))
	}
	c := &Contract{Source: source, doc: root, byPublished: map[string]*Entry{}}
	for i, raw := range list {
		e, err := entryFromTree(raw)
		if err != nil {
			where := entryAt(i)
			var fe *fieldError
			if errors.As(err, &fe) {
				where += "." + fe.field
				err = errors.New(fe.msg)
			}
			msg := err.Error()
			if obj, ok := raw.(*Object); ok && obj.Line > 0 {
				msg += fmt.Sprintf(" (the entry begins at line %d)", obj.Line)
			}
			return nil, malformed(where, "%s", msg)
		}
		if other, dup := c.byPublished[e.Published()]; dup {
			return nil, malformed(entryAt(i), "%s is published as %s, the name %s already has; give one of them another renderings.mcp", e.Name, e.Published(), other.Name)
		}
		c.byPublished[e.Published()] = e
		c.Entries = append(c.Entries, e)
	}
	return c, nil
}

// entryAt names the contract's i-th entry in a refusal; made only for one,
// since a contract may hold thousands of entries.
func entryAt(i int) string { return fmt.Sprintf("entries[%d]", i) }

// fieldError is a shape problem at one key of an entry.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

func fieldErr(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

func entryFromTree(raw any) (*Entry, error) {
	obj, ok := raw.(*Object)
	if !ok {
		return nil, fmt.Errorf("an entry is a mapping with name, summary, input and renderings, not %s", describeValue(raw))
	}
	e := &Entry{}
	for _, m := range obj.Members {
		switch m.Key {
		case "name", "summary", "input", "renderings":
		default:
			return nil, fieldErr(m.Key, "unknown key (an entry has name, summary, input and renderings)")
		}
	}
	name, _ := obj.Get("name")
	e.Name, ok = name.(string)
	if !ok || !isEntryName(e.Name) {
		return nil, fieldErr("name", "%s does not match [a-z][a-z0-9_.-]*", describeValue(name))
	}
	summary, _ := obj.Get("summary")
	e.Summary, ok = summary.(string)
	if !ok || strings.TrimSpace(e.Summary) == "" {
		return nil, fieldErr("summary", "%s is not a non-blank string (it is the tool's description)", describeValue(summary))
	}
	if r, present := obj.Get("renderings"); present {
		if err := e.setRenderings(r); err != nil {
			return nil, err
		}
	}
	if !isPublishedName(e.Published()) {
		return nil, fieldErr("name", "its default mcp rendering %q does not match %s; give a shorter name or a renderings.mcp", e.Published(), publishedNameRules)
	}
	input, present := obj.Get("input")
	if !present {
		return nil, fieldErr("input", "missing (a JSON Schema whose root is {\"type\":\"object\"})")
	}
	if err := e.setInput(input); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Entry) setRenderings(r any) error {
	obj, ok := r.(*Object)
	if !ok {
		return fieldErr("renderings", "is %s, not a mapping", describeValue(r))
	}
	for _, m := range obj.Members {
		if m.Key != "mcp" {
			return fieldErr("renderings."+m.Key, "unknown rendering (this build publishes mcp only)")
		}
		name, ok := m.Value.(string)
		if !ok || !isPublishedName(name) {
			return fieldErr("renderings.mcp", "%s does not match %s", describeValue(m.Value), publishedNameRules)
		}
		e.Rendering = name
	}
	return nil
}

// setInput checks the input schema as far as the call checks rely on it:
// an object root, properties that are schemas, required naming properties,
// and no additional properties admitted (the server refuses them).
func (e *Entry) setInput(input any) error {
	schema, ok := input.(*Object)
	if !ok {
		return fieldErr("input", "is %s; the input root must be a schema with type: object", describeValue(input))
	}
	if t, _ := schema.Get("type"); t != "object" {
		return fieldErr("input.type", "is %s; the input root must be type: object (MCP clients drop or refuse any other)", describeValue(t))
	}
	if props, present := schema.Get("properties"); present {
		obj, ok := props.(*Object)
		if !ok {
			return fieldErr("input.properties", "is %s, not a mapping of field names to schemas", describeValue(props))
		}
		for _, m := range obj.Members {
			switch m.Value.(type) {
			case *Object, bool:
			default:
				return fieldErr("input.properties."+m.Key, "is %s, not a schema", describeValue(m.Value))
			}
			e.fields = append(e.fields, m.Key)
		}
	}
	if req, present := schema.Get("required"); present {
		list, ok := req.([]any)
		if !ok {
			return fieldErr("input.required", "is %s, not a list of field names", describeValue(req))
		}
		seen := map[string]bool{}
		for i, r := range list {
			name, ok := r.(string)
			if !ok {
				return fieldErr(fmt.Sprintf("input.required[%d]", i), "is %s, not a field name", describeValue(r))
			}
			if seen[name] {
				return fieldErr(fmt.Sprintf("input.required[%d]", i), "%q is listed twice", name)
			}
			if !contains(e.fields, name) {
				return fieldErr(fmt.Sprintf("input.required[%d]", i), "%q is not under input.properties, so no call could give it", name)
			}
			seen[name] = true
			e.required = append(e.required, name)
		}
	}
	if ap, present := schema.Get("additionalProperties"); present && ap != false {
		return fieldErr("input.additionalProperties", "is %s; the server refuses every key not under properties, so declare them there (or write false)", describeValue(ap))
	}
	e.Input = schema
	e.inputJSON = appendJSON(nil, schema, "", false)
	// mcp-go refuses a tool whose x-mcp-header annotations break its rules
	// by panicking as the tool is added; the check is a JSON round trip of
	// the schema, so it runs here only where the annotation is written.
	if bytes.Contains(e.inputJSON, []byte(`"x-mcp-header"`)) {
		if err := mcp.ValidateParamHeaderAnnotations(&mcp.Tool{Name: e.Published(), RawInputSchema: e.inputJSON}); err != nil {
			return fieldErr("input", "%v (MCP's rule for x-mcp-header: a header name, each used once, on a string, integer or boolean field; mcp-serve could not publish the entry)", err)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describeValue names a value's kind (and a short value) for messages.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case Number:
		return "the number " + string(v)
	case string:
		if len(v) > 64 {
			v = v[:61] + "..."
		}
		return fmt.Sprintf("the string %q", v)
	case []any:
		return "a list"
	case *Object:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
