package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// hostileRunes are the characters the scratch copy must carry as escapes,
// and the astral ones it must carry raw (YAML refuses surrogate escapes).
var hostileRunes = []rune{
	0x00, 0x01, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1b, 0x1f, // C0
	0x7f,                         // DEL
	0x80, 0x84, 0x85, 0x8d, 0x9f, // C1, NEL among them
	0xa0, 0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff, // line and paragraph separators, BOM, non-characters
	0x1f600, 0x10ffff, 0x1d11e, 0xe000, 0xfffd, // astral, private use, replacement
	'"', '\\', '/', '\'', '#', ':', '&', '*', '!', '|', '>', '%', '@', '`', '{', '}', '[', ']', ',', '-', '?',
}

func randomString(r *rand.Rand, max int) string {
	n := r.IntN(max + 1)
	var b strings.Builder
	for range n {
		switch r.IntN(4) {
		case 0:
			b.WriteRune(hostileRunes[r.IntN(len(hostileRunes))])
		case 1:
			b.WriteRune(rune(0x20 + r.IntN(0x5f)))
		case 2:
			b.WriteRune(rune(0x10000 + r.IntN(0x10ffff-0x10000)))
		default:
			c := rune(r.IntN(0xfffe))
			if utf8.ValidRune(c) {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}

// randomContract builds a contract tree whose summaries, schema keys (field
// names) and schema strings are random Unicode.
func randomContract(r *rand.Rand) *Object {
	var entries []any
	for i := range 1 + r.IntN(4) {
		props := &Object{}
		seen := map[string]bool{}
		for range r.IntN(5) {
			k := randomString(r, 12)
			if seen[k] {
				continue
			}
			seen[k] = true
			enum := []any{}
			for range r.IntN(3) {
				enum = append(enum, randomString(r, 8))
			}
			props.Members = append(props.Members, Member{k, &Object{Members: []Member{
				{"type", "string"},
				{"description", randomString(r, 40)},
				{"enum", enum},
				{"default", randomString(r, 8)},
				{"maxLength", Number(fmt.Sprint(r.IntN(1 << 20)))},
			}}})
		}
		entries = append(entries, &Object{Members: []Member{
			{"name", fmt.Sprintf("e%d.x-%d", i, r.IntN(100))},
			{"summary", "s" + randomString(r, 60)},
			{"input", &Object{Members: []Member{{"type", "object"}, {"properties", props}, {"title", randomString(r, 20)}}}},
		}})
	}
	return &Object{Members: []Member{{"format", ContractFormat}, {"entries", entries}}}
}

// plain turns the tree into what encoding/json decodes (with UseNumber).
func plain(v any) any {
	switch v := v.(type) {
	case *Object:
		m := map[string]any{}
		for _, x := range v.Members {
			m[x.Key] = plain(x.Value)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = plain(x)
		}
		return out
	case Number:
		return json.Number(v)
	}
	return v
}

// TestCopyReadsBackRandomUnicode is the property of SPEC §7.4: for random
// Unicode in field names, summaries and schema strings, the scratch copy
// holds no character YAML refuses raw or reads as a line break, and reads
// back identical through the YAML loader and through a JSON parser.
func TestCopyReadsBackRandomUnicode(t *testing.T) {
	seeds := []uint64{1, 2, 3, 42, uint64(time.Now().UnixNano())}
	for _, seed := range seeds {
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range 200 {
			tree := randomContract(r)
			c, err := contractFromTree("random", tree)
			if err != nil {
				t.Fatalf("seed %d #%d: the generated contract does not check: %v", seed, i, err)
			}
			data := c.CopyBytes()
			for _, ch := range string(data) {
				if ch != '\n' && yamlHostile(ch) {
					t.Fatalf("seed %d #%d: the copy holds U+%04X raw", seed, i, ch)
				}
			}
			viaYAML, err := yamlTree(data)
			if err != nil {
				t.Fatalf("seed %d #%d: the copy does not read back through YAML: %v\n%s", seed, i, err, data)
			}
			backYAML, err := contractFromTree("copy", viaYAML)
			if err != nil {
				t.Fatalf("seed %d #%d: the copy read through YAML does not check: %v", seed, i, err)
			}
			backServer, err := ParseContract("copy", data)
			if err != nil {
				t.Fatalf("seed %d #%d: the server's loader does not read the copy back: %v", seed, i, err)
			}
			for how, back := range map[string]*Contract{"YAML": backYAML, "the server's loader": backServer} {
				if eq, where := c.Equal(back); !eq {
					t.Fatalf("seed %d #%d: %s read back a different catalogue at %s", seed, i, how, where)
				}
			}
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var viaJSON any
			if err := dec.Decode(&viaJSON); err != nil {
				t.Fatalf("seed %d #%d: the copy is not JSON: %v", seed, i, err)
			}
			if d := cmp.Diff(plain(tree), viaJSON); d != "" {
				t.Fatalf("seed %d #%d: JSON read back a different document (-want +got):\n%s", seed, i, d)
			}
		}
	}
}

func loadGood(t *testing.T) *Contract {
	t.Helper()
	c, err := LoadContract("testdata/contracts/good_minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCopyDiffersWithFaultyWriter injects writers that lose or change
// bytes: the read-back catches each, and the message names the copy and
// the contract.
func TestCopyDiffersWithFaultyWriter(t *testing.T) {
	c := loadGood(t)
	for name, tc := range map[string]struct {
		write func(path string, data []byte) error
		want  string
	}{
		"changed summary": {func(p string, d []byte) error {
			return os.WriteFile(p, bytes.Replace(d, []byte("Read a text"), []byte("Read a test"), 1), 0o600)
		}, "reads back as a different catalogue (at entries[0].summary)"},
		"truncated": {func(p string, d []byte) error { return os.WriteFile(p, d[:len(d)/2], 0o600) }, "does not read back as the checked catalogue"},
		"emptied":   {func(p string, d []byte) error { return os.WriteFile(p, nil, 0o600) }, "does not read back as the checked catalogue"},
		"dropped escape": {func(p string, d []byte) error {
			// A raw NEL, which YAML reads as a line break and folds.
			return os.WriteFile(p, bytes.Replace(d, []byte(`workspace.`), []byte("workspace.\u0085x"), 1), 0o600)
		}, "reads back as a different catalogue (at entries[0].summary)"},
		"failed":          {func(string, []byte) error { return errors.New("disk full") }, "could not be written: disk full"},
		"nothing written": {func(string, []byte) error { return nil }, "does not read back as the checked catalogue"},
	} {
		t.Run(name, func(t *testing.T) {
			err := ScratchCopier{Write: tc.write}.WriteCopy(c, filepath.Join(t.TempDir(), "copy.json"))
			wantRefusal(t, err, RefuseCopyDiffers, tc.want, "good_minimal.yaml")
		})
	}
}

func TestCopyNeverOverwrites(t *testing.T) {
	c := loadGood(t)
	p := filepath.Join(t.TempDir(), "copy.json")
	if err := os.WriteFile(p, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, WriteScratchCopy(c, p), RefuseCopyDiffers, "could not be written", "file exists")
	if got, _ := os.ReadFile(p); string(got) != "mine" {
		t.Errorf("the copy overwrote an existing file: %q", got)
	}
}

func TestCopyIsServedAsWritten(t *testing.T) {
	c := loadGood(t)
	p := filepath.Join(t.TempDir(), "copy.json")
	if err := WriteScratchCopy(c, p); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("copy mode %v, %v", st.Mode(), err)
	}
	back, err := LoadContract(p)
	if err != nil {
		t.Fatal(err)
	}
	if eq, where := c.Equal(back); !eq {
		t.Fatalf("differs at %s", where)
	}
}

// TestCopyPast4MiB: a contract within the limit whose copy would pass it
// (escapes take six bytes for one) is catalogue-malformed, before anything
// is written.
func TestCopyPast4MiB(t *testing.T) {
	summary := strings.Repeat(`\x01`, MaxContractBytes/5)
	src := fmt.Sprintf("format: metaharness.tool-contract/1\nentries: [{name: a, input: {type: object}, summary: \"x%s\"}]\n", summary)
	if len(src) > MaxContractBytes {
		t.Fatalf("the source is %d bytes, past the limit itself", len(src))
	}
	c, err := ParseContract("big.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "copy.json")
	wantRefusal(t, WriteScratchCopy(c, p), RefuseMalformed, "would make a scratch copy of", "past the 4 MiB")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a copy was written: %v", err)
	}
}

// TestCopyCarriesALongKey: a key longer than YAML's 1024-character limit
// on an implicit key cannot be read from a JSON-shaped text by the YAML
// parser, but the server reads its copy as JSON (jsonTree), so the
// contract is carried.
func TestCopyCarriesALongKey(t *testing.T) {
	key := strings.Repeat("k", 2000)
	src := fmt.Sprintf("format: metaharness.tool-contract/1\nentries:\n  - name: a\n    summary: A.\n    input:\n      type: object\n      properties:\n        ? %s\n        : {type: string}\n", key)
	c, err := ParseContract("long.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := yamlTree(c.CopyBytes()); err == nil {
		t.Error("the YAML parser read a 2000-character implicit key: the control no longer holds")
	}
	if err := WriteScratchCopy(c, filepath.Join(t.TempDir(), "copy.json")); err != nil {
		t.Fatal(err)
	}
}

// TestCopyEscapesAreNeeded is the control for the property: written raw,
// as a plain JSON encoder leaves them, DEL, the C1 controls (NEL among
// them) and the non-characters make this YAML reader fail or read something
// else; escaped, they read back. U+2028, U+2029 and U+FEFF this reader takes
// raw, but YAML 1.1 readers read the first two as line breaks and the third
// as a byte-order mark, so the copy escapes them too. The server reads its
// copy as JSON (jsonTree) and would take them raw; the escapes keep the copy
// one any YAML reader reads the same.
func TestCopyEscapesAreNeeded(t *testing.T) {
	for _, r := range []rune{0x01, 0x7f, 0x80, 0x85, 0x9f, 0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff} {
		tree := &Object{Members: []Member{{"format", ContractFormat}, {"entries", []any{&Object{Members: []Member{
			{"name", "a"}, {"summary", "x" + string(r) + "y"}, {"input", &Object{Members: []Member{{"type", "object"}}}},
		}}}}}}
		c, err := contractFromTree("t", tree)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := ParseContract("copy", c.CopyBytes()); err != nil {
			t.Errorf("U+%04X escaped: %v", r, err)
		} else if eq, _ := c.Equal(back); !eq {
			t.Errorf("U+%04X escaped: reads back different", r)
		}
		if r < 0x20 || r == 0x2028 || r == 0x2029 || r == 0xfeff {
			continue // JSON itself escapes C0; see above for the others
		}
		raw, err := yamlTree(appendJSON(nil, tree, "\n", false))
		if err != nil {
			continue // the YAML reader refuses it raw
		}
		if back, err := contractFromTree("raw", raw); err == nil {
			if eq, _ := c.Equal(back); eq {
				t.Errorf("U+%04X raw reads back: the escape would not be needed", r)
			}
		}
	}
}
