package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/record"
)

// Format is the tag every frame document carries.
const Format = "metaharness.frame/1"

// SealCommand is how a frame is sealed from a clone of this module, for the
// messages that send the reader to it.
const SealCommand = "go run ./frame/seal DRAFT > FRAME"

// MaxBytes bounds a frame file; a frame is a page of facts, not a data set.
const MaxBytes = 4 << 20

// Load errors. Each is distinct so that the launcher (and a test) can say
// exactly why a frame was refused; test with errors.Is.
var (
	ErrUnreadable     = errors.New("frame unreadable")
	ErrNotJSON        = errors.New("frame is not a JSON object")
	ErrUnknownFormat  = errors.New("not a " + Format + " document")
	ErrInvalid        = errors.New("frame has an invalid shape")
	ErrDigestMismatch = errors.New("frame digest does not match its content")
)

// DigestMismatchError is the ErrDigestMismatch a loader returns: the digest
// the document states and the one its content has. A mismatch is refused,
// never repaired.
type DigestMismatchError struct {
	Stated, Computed string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("%v: the document states %s but its content digests to %s", ErrDigestMismatch, e.Stated, e.Computed)
}

// Is makes errors.Is(err, ErrDigestMismatch) hold.
func (e *DigestMismatchError) Is(target error) bool { return target == ErrDigestMismatch }

// Document is the content of a frame: everything but the format tag and the
// digest. Build one, then Seal it.
type Document struct {
	Workflow    Workflow       `json:"workflow"`
	Node        NodeRef        `json:"node"`
	Step        record.StepRef `json:"step"`
	Prior       []Fact         `json:"prior"`
	Obligations []Requirement  `json:"obligations"`
	Reaching    []Requirement  `json:"reaching"`
	Next        []NodeRef      `json:"next"`
	Handoff     Handoff        `json:"handoff"`
	Subjects    SubjectScope   `json:"subjects"`
	Operations  []Operation    `json:"operations"`
	Entities    *Entities      `json:"entities,omitempty"`
}

// Workflow names the workflow and pins its version for the run.
type Workflow struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// NodeRef names a node of the workflow: the current one, or one reachable.
type NodeRef struct {
	ID string `json:"id"`
}

// Fact is one established fact, one line.
type Fact struct {
	Text   string  `json:"text"`
	Source *string `json:"source,omitempty"`
}

// Requirement is an obligation (or an unmet requirement on a way out,
// prefixed with its destination), verbatim, never summarised.
type Requirement struct {
	Text    string  `json:"text"`
	AskedBy *string `json:"asked_by,omitempty"`
}

// Handoff is what the step hands on: {"handoff":"none"},
// {"handoff":"artifact","name":…,"kind":…} or
// {"handoff":"structured_answer","schema":{…}}. It must be stated even when
// it is none.
type Handoff struct {
	Handoff string          `json:"handoff"`
	Name    *string         `json:"name,omitempty"`
	Kind    *string         `json:"kind,omitempty"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// Handoff variants.
const (
	HandoffNone             = "none"
	HandoffArtifact         = "artifact"
	HandoffStructuredAnswer = "structured_answer"
)

// Operation is one admitted operation: {"op":"file.read"}, or
// {"op":"mcp.call","server":…,"tool":…}, which alone names its target.
type Operation struct {
	Op     string `json:"op"`
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// MCPCall is the one operation that names a server and a tool.
const MCPCall = "mcp.call"

func (o Operation) String() string {
	if o.Op == MCPCall {
		return MCPCall + "(" + o.Server + "/" + o.Tool + ")"
	}
	return o.Op
}

// Entities is the routing choice set, when the step has one.
type Entities struct {
	Source  string   `json:"source"`
	Members []string `json:"members"`
}

// Frame is a sealed, valid frame. It cannot be changed: build a Document and
// Seal it again.
type Frame struct {
	doc       Document
	canonical []byte
	digest    string
}

// Digest is the frame's SHA-256 (lowercase hex) over its canonical content.
func (f *Frame) Digest() string { return f.digest }

// Document returns a copy of the frame's content.
func (f *Frame) Document() Document {
	var d Document
	if err := json.Unmarshal(f.canonical, &d); err != nil {
		panic("frame: a sealed frame's canonical form does not decode: " + err.Error())
	}
	return d
}

// Operations lists the admitted operations, sorted.
func (f *Frame) Operations() []Operation { return slices.Clone(f.doc.Operations) }

// Admits reports whether the frame admits op. An mcp.call is admitted only
// for the server and tool the frame names.
func (f *Frame) Admits(op Operation) bool {
	for _, a := range f.doc.Operations {
		if a.Op == op.Op && (a.Op != MCPCall || (a.Server == op.Server && a.Tool == op.Tool)) {
			return true
		}
	}
	return false
}

// Scope is the frame's subject scope (empty: it restricts nothing).
func (f *Frame) Scope() SubjectScope { return slices.Clone(f.doc.Subjects) }

// MarshalJSON writes the whole document (format, content, digest) compactly
// with sorted keys, for example inside a frame.set command.
func (f *Frame) MarshalJSON() ([]byte, error) {
	return canonical(f.documentJSON())
}

// Encode writes the document as a file is written: indented JSON with sorted
// keys and a trailing newline. Writing never reseals: the digest is the one
// the frame was sealed with.
func (f *Frame) Encode() []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, f.documentJSON(), "", "  "); err != nil {
		panic("frame: indenting a sealed frame: " + err.Error())
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// documentJSON is the canonical content with the format and digest added;
// both keys sort where canonical order puts them.
func (f *Frame) documentJSON() []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.canonical, &m); err != nil {
		panic("frame: a sealed frame's canonical form does not decode: " + err.Error())
	}
	m["format"] = json.RawMessage(`"` + Format + `"`)
	m["digest"] = json.RawMessage(`"` + f.digest + `"`)
	raw, err := json.Marshal(m)
	if err != nil {
		panic("frame: encoding a sealed frame: " + err.Error())
	}
	out, err := canonical(raw)
	if err != nil {
		panic("frame: encoding a sealed frame: " + err.Error())
	}
	return out
}

// Seal checks a document and returns it sealed: the operations sorted, the
// digest computed over the canonical content. Nil lists are read as empty.
func Seal(d Document) (*Frame, error) {
	normalize(&d)
	if err := validate(&d); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c, err := canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	f := &Frame{canonical: c, digest: sha256Hex(c)}
	f.doc = f.Document() // a copy the caller's slices cannot reach
	return f, nil
}

func normalize(d *Document) {
	d.Operations = slices.Clone(d.Operations) // sorted below; not the caller's
	for _, l := range []*[]Requirement{&d.Obligations, &d.Reaching} {
		if *l == nil {
			*l = []Requirement{}
		}
	}
	if d.Prior == nil {
		d.Prior = []Fact{}
	}
	if d.Next == nil {
		d.Next = []NodeRef{}
	}
	if d.Subjects == nil {
		d.Subjects = SubjectScope{}
	}
	if d.Operations == nil {
		d.Operations = []Operation{}
	}
	if d.Entities != nil && d.Entities.Members == nil {
		d.Entities.Members = []string{}
	}
	slices.SortFunc(d.Operations, func(a, b Operation) int {
		return strings.Compare(a.Op+"\x00"+a.Server+"\x00"+a.Tool, b.Op+"\x00"+b.Server+"\x00"+b.Tool)
	})
}

var digestPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

// requiredKeys are the content keys a document must state; entities may be
// left out when the step has no choice set.
var requiredKeys = []string{
	"workflow", "node", "step", "prior", "obligations", "reaching", "next",
	"handoff", "subjects", "operations",
}

// Parse loads a frame document: one JSON object, the format tag, the shape,
// then the digest recomputed and compared. Each step fails with its own
// error (ErrNotJSON, ErrUnknownFormat, ErrInvalid, ErrDigestMismatch).
func Parse(b []byte) (*Frame, error) { return parse(b, true) }

// ParseDraft reads a document to be sealed: every rule of Parse holds but
// the digest's, which a draft may leave out or state stale, and the frame
// returned is sealed over the content as written. It is for whoever seals
// frames (frame/seal); a run loads with Parse and never reseals.
func ParseDraft(b []byte) (*Frame, error) { return parse(b, false) }

func parse(b []byte, sealed bool) (*Frame, error) {
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: the bytes are not UTF-8", ErrNotJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: there is more after the frame object", ErrNotJSON)
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the document is JSON but not one object", ErrNotJSON)
	}
	// The map above kept the last of a repeated key; a document that
	// repeats one says two things, so it is refused before any is read.
	if err := jsonscan.Check(b, nil, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch tag, present := obj["format"]; {
	case !present || tag == nil:
		return nil, fmt.Errorf("%w: it has no \"format\" tag (want %q)", ErrUnknownFormat, Format)
	case tag != Format:
		return nil, fmt.Errorf("%w: its format tag is %s", ErrUnknownFormat, jsonText(tag))
	}
	var wire struct {
		Format string `json:"format"`
		Digest string `json:"digest"`
		Document
	}
	if err := jsonscan.Check(b, &wire, jsonscan.Options{RefuseUnknown: true}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	stated, ok := obj["digest"].(string)
	switch {
	case !sealed:
	case !ok:
		return nil, fmt.Errorf("%w: \"digest\" must be the sealed SHA-256 (64 lowercase hex digits); seal the frame first (%s, docs/frames.md)", ErrInvalid, SealCommand)
	case !digestPattern().MatchString(stated):
		return nil, fmt.Errorf("%w: \"digest\" %q is not 64 lowercase hex digits", ErrInvalid, stated)
	}
	for _, k := range requiredKeys {
		if _, ok := obj[k]; !ok {
			return nil, fmt.Errorf("%w: %q is missing; a frame states every list, empty when there is nothing", ErrInvalid, k)
		}
	}
	if where := findNull(obj, ""); where != "" {
		return nil, fmt.Errorf("%w: %s is null; leave an optional key out instead", ErrInvalid, where)
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	f, err := Seal(wire.Document)
	if err != nil {
		return nil, err
	}
	if err := readsBackAsWritten(obj, f); err != nil {
		return nil, err
	}
	if sealed && f.digest != stated {
		return nil, &DigestMismatchError{Stated: stated, Computed: f.digest}
	}
	return f, nil
}

// readsBackAsWritten checks that the content as written (operations in
// canonical order) is exactly the content as read. Repeated, case-variant
// and unknown keys are refused before this; what is left is a value the
// typed content does not carry (an empty server or tool), which would
// otherwise be digested as something other than what its author sealed.
func readsBackAsWritten(obj map[string]any, f *Frame) error {
	written := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "format" && k != "digest" {
			written[k] = v
		}
	}
	if ops, ok := written["operations"].([]any); ok {
		ops = slices.Clone(ops)
		slices.SortStableFunc(ops, func(a, b any) int { return strings.Compare(opKey(a), opKey(b)) })
		written["operations"] = ops
	}
	if got := appendCanonical(nil, written); !bytes.Equal(got, f.canonical) {
		var read any
		d := json.NewDecoder(bytes.NewReader(f.canonical))
		d.UseNumber()
		_ = d.Decode(&read)
		return fmt.Errorf("%w: %s does not read back as written: the typed content leaves out a key there (an empty optional value, say; leave the key out instead; see docs/frames.md)",
			ErrInvalid, firstDifference(written, read, ""))
	}
	return nil
}

// firstDifference names where two decoded JSON values first differ.
func firstDifference(a, b any, at string) string {
	name := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(a)+len(bm))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range bm {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			av, inA := a[k]
			bv, inB := bm[k]
			if inA != inB {
				return name(k)
			}
			if !bytes.Equal(appendCanonical(nil, av), appendCanonical(nil, bv)) {
				return firstDifference(av, bv, name(k))
			}
		}
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			break
		}
		for i := range a {
			if !bytes.Equal(appendCanonical(nil, a[i]), appendCanonical(nil, bl[i])) {
				return firstDifference(a[i], bl[i], fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
	if at == "" {
		return "the document"
	}
	return at
}

func opKey(v any) string {
	m, _ := v.(map[string]any)
	s := func(k string) string { x, _ := m[k].(string); return x }
	return s("op") + "\x00" + s("server") + "\x00" + s("tool")
}

// findNull returns the path of the first null in a document, or "". The
// structured-answer schema is the caller's own JSON Schema and may hold
// nulls; everywhere else a null would read the same as a missing key and
// make the digest depend on which one was written.
func findNull(v any, at string) string {
	switch v := v.(type) {
	case nil:
		return at
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if at != "" {
				p = at + "." + k
			}
			if p == "handoff.schema" && v[k] != nil {
				continue
			}
			if w := findNull(v[k], p); w != "" {
				return w
			}
		}
	case []any:
		for i, x := range v {
			if w := findNull(x, fmt.Sprintf("%s[%d]", at, i)); w != "" {
				return w
			}
		}
	}
	return ""
}

// Load reads and parses a frame file. I/O failures, a non-regular file
// (never waited on: a named pipe is refused, not opened for good) and a
// file past MaxBytes are ErrUnreadable.
func Load(path string) (*Frame, error) {
	b, err := inputfile.Read(path, MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return Parse(b)
}

func validate(d *Document) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	if blank(d.Workflow.ID) || blank(d.Workflow.Version) {
		return bad("workflow needs a non-blank id and version")
	}
	if blank(d.Node.ID) {
		return bad("node needs a non-blank id")
	}
	if blank(d.Step.Workflow) || blank(d.Step.State) {
		return bad("step needs a non-blank workflow and state")
	}
	if d.Step.Attempt < 1 {
		return bad("step.attempt counts from 1")
	}
	for i, p := range d.Prior {
		if blank(p.Text) {
			return bad("prior[%d].text is blank", i)
		}
	}
	for name, list := range map[string][]Requirement{"obligations": d.Obligations, "reaching": d.Reaching} {
		for i, r := range list {
			if blank(r.Text) {
				return bad("%s[%d].text is blank", name, i)
			}
		}
	}
	for i, n := range d.Next {
		if blank(n.ID) {
			return bad("next[%d].id is blank", i)
		}
	}
	if err := d.Handoff.validate(); err != nil {
		return bad("handoff: %v", err)
	}
	if err := d.Subjects.validate(); err != nil {
		return bad("subjects: %v", err)
	}
	for i, o := range d.Operations {
		if err := o.validate(); err != nil {
			return bad("operations: %v", err)
		}
		if i > 0 && o == d.Operations[i-1] {
			return bad("operations lists %s twice", o)
		}
	}
	if d.Entities != nil && blank(d.Entities.Source) {
		return bad("entities.source is blank")
	}
	return nil
}

func (h Handoff) validate() error {
	switch h.Handoff {
	case HandoffNone:
		if h.Name != nil || h.Kind != nil || h.Schema != nil {
			return errors.New(`"none" takes no name, kind or schema`)
		}
	case HandoffArtifact:
		if h.Name == nil || blank(*h.Name) {
			return errors.New(`"artifact" needs a non-blank name`)
		}
		if h.Schema != nil {
			return errors.New(`"artifact" takes no schema`)
		}
	case HandoffStructuredAnswer:
		if s := bytes.TrimSpace(h.Schema); len(s) == 0 || s[0] != '{' {
			return errors.New(`"structured_answer" needs a schema object`)
		}
		if h.Name != nil || h.Kind != nil {
			return errors.New(`"structured_answer" takes no name or kind`)
		}
	default:
		return fmt.Errorf("%q is not none, artifact or structured_answer", h.Handoff)
	}
	return nil
}

func (o Operation) validate() error {
	if !record.IsOperation(o.Op) {
		return fmt.Errorf("%q is not an operation of the vocabulary (%s)", o.Op, strings.Join(record.Operations, ", "))
	}
	if o.Op == MCPCall {
		if blank(o.Server) || blank(o.Tool) {
			return fmt.Errorf("mcp.call names its server and tool (server %q, tool %q)", o.Server, o.Tool)
		}
	} else if o.Server != "" || o.Tool != "" {
		return fmt.Errorf("%s takes no server or tool", o.Op)
	}
	return nil
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
