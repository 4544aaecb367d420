package mcpserve

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/metaharness/metaharness/exit"
)

// wantRefusal checks that err is the refusal named code (exit 2) and that
// its message holds each of the substrings.
func wantRefusal(t *testing.T, err error, code exit.Name, subs ...string) {
	t.Helper()
	var r *exit.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want refusal %s, got %v", code, err)
	}
	if r.Name != code {
		t.Fatalf("want refusal %s, got %s: %s", code, r.Name, r.Message)
	}
	for _, s := range subs {
		if !strings.Contains(r.Message, s) {
			t.Errorf("refusal %s: message %q lacks %q", code, r.Message, s)
		}
	}
}

// TestContractVectors loads every file in testdata/contracts: good_* load,
// the others are refused with the code their prefix names and a message
// holding the file's "# want:" line.
func TestContractVectors(t *testing.T) {
	prefixes := map[string]exit.Name{
		"not_contract_": RefuseNotToolContract,
		"malformed_":    RefuseMalformed,
		"unreadable_":   RefuseUnreadable,
	}
	files, _ := filepath.Glob("testdata/contracts/*")
	if len(files) < 20 {
		t.Fatalf("only %d vectors", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			c, err := LoadContract(f)
			if strings.HasPrefix(name, "good_") {
				if err != nil {
					t.Fatal(err)
				}
				roundTrip(t, c)
				return
			}
			var code exit.Name
			for p, c := range prefixes {
				if strings.HasPrefix(name, p) {
					code = c
				}
			}
			if code == "" {
				t.Fatalf("vector %s has no known prefix", name)
			}
			wantRefusal(t, err, code, wantLine(t, f), f)
		})
	}
}

// wantLine is the text after "# want: " in a vector, or "" when it has none.
func wantLine(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			return w
		}
	}
	return ""
}

// roundTrip checks that a contract's scratch copy reads back identical.
func roundTrip(t *testing.T, c *Contract) {
	t.Helper()
	if err := WriteScratchCopy(c, filepath.Join(t.TempDir(), "copy.json")); err != nil {
		t.Fatal(err)
	}
}

func TestContractGoodShapes(t *testing.T) {
	c, err := LoadContract("testdata/contracts/good_minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{c.Entries[0].Published(), c.Entries[1].Published()}; got[0] != "read_file" || got[1] != "fs_list" {
		t.Errorf("published names %v", got)
	}
	if got := string(c.Entries[0].InputSchema()); got != `{"type":"object","properties":{"path":{"type":"string"},"max_bytes":{"type":"integer"}},"required":["path"]}` {
		t.Errorf("input schema not published as written: %s", got)
	}
	j, err := LoadContract("testdata/contracts/good_json.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(j.Entries[0].InputSchema()); !strings.Contains(got, `"maximum":18446744073709551617,"minimum":1e400`) {
		t.Errorf("numbers lost their text: %s", got)
	}
	y, err := LoadContract("testdata/contracts/good_yaml_numbers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(y.Entries[0].InputSchema()); !strings.Contains(got, `"maximum":16`) || !strings.Contains(got, `"minimum":0.5`) || !strings.Contains(got, `"default":"2001-12-14"`) {
		t.Errorf("YAML scalars not read in the JSON data model: %s", got)
	}
}

func TestContractUnreadable(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing", func(t *testing.T) {
		_, err := LoadContract(filepath.Join(dir, "nope.yaml"))
		wantRefusal(t, err, RefuseUnreadable, "cannot be opened", "nope.yaml")
	})
	t.Run("directory", func(t *testing.T) {
		_, err := LoadContract(dir)
		wantRefusal(t, err, RefuseUnreadable, "is a directory, not a regular file")
	})
	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadContract(fifo) // must not block waiting for a writer
		wantRefusal(t, err, RefuseUnreadable, "a named pipe")
	})
	t.Run("socket", func(t *testing.T) {
		sock := filepath.Join(dir, "sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, err = LoadContract(sock)
		wantRefusal(t, err, RefuseUnreadable, "a socket")
	})
	t.Run("read error", func(t *testing.T) {
		// /proc/self/mem is a regular file whose first page cannot be read,
		// even by root.
		_, err := LoadContract("/proc/self/mem")
		wantRefusal(t, err, RefuseUnreadable, "cannot be read")
	})
	t.Run("permission", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads a mode-000 file; the read error case covers an unreadable file")
		}
		p := filepath.Join(dir, "locked.yaml")
		if err := os.WriteFile(p, []byte("format: x\n"), 0); err != nil {
			t.Fatal(err)
		}
		_, err := LoadContract(p)
		wantRefusal(t, err, RefuseUnreadable, "cannot be opened")
	})
	t.Run("over 4 MiB", func(t *testing.T) {
		p := filepath.Join(dir, "big.yaml")
		if err := os.WriteFile(p, bytes.Repeat([]byte("#\n"), MaxContractBytes/2+1), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadContract(p)
		wantRefusal(t, err, RefuseUnreadable, "past its limit of 4194304 (4 MiB)")
	})
	t.Run("exactly 4 MiB", func(t *testing.T) {
		head := "format: metaharness.tool-contract/1\nentries: []\n"
		data := head + strings.Repeat("#", MaxContractBytes-len(head)-1) + "\n"
		p := filepath.Join(dir, "limit.yaml")
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadContract(p); err != nil {
			t.Fatalf("a contract of exactly 4 MiB is within the limit: %v", err)
		}
	})
	t.Run("not UTF-8", func(t *testing.T) {
		_, err := ParseContract("x.yaml", []byte("format: metaharness.tool-contract/1\nentries: []\n# \xc3\x28\n"))
		wantRefusal(t, err, RefuseUnreadable, "is not UTF-8", "offset 50")
	})
}

// Carriages as kinds declare them: one that carries a contract, one that
// carries none, one that reserves the MCP names.
var (
	carried    = Carriage{}
	notCarried = Carriage{NotCarried: "this loop publishes its own catalogue"}
	reserving  = Carriage{ReservedNames: []string{"mcp"}, ReservedPrefixes: []string{"mcp__"}, ReservedWhy: "a name the harness keeps for its MCP tools"}
)

func TestCheckFor(t *testing.T) {
	c, err := ParseContract("tools.yaml", []byte(`
format: metaharness.tool-contract/1
entries:
  - {name: fs.read, summary: Read., input: {type: object}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		carriage Carriage
		programs []string
		code     exit.Name
	}{
		{carried, nil, ""},
		{reserving, nil, ""},
		{notCarried, nil, RefuseNotCarried},
		{notCarried, []string{"make"}, RefuseNotCarried},
		{carried, []string{"make"}, RefuseWithAllowProgram},
	} {
		err := c.CheckFor(tc.carriage, tc.programs)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc, err)
			}
			continue
		}
		wantRefusal(t, err, tc.code, "tools.yaml")
	}
	wantRefusal(t, c.CheckFor(notCarried, nil), RefuseNotCarried, "--catalogue tools.yaml: this loop publishes its own catalogue")
}

// TestCheckForNameLength: a kind whose harness cuts long names refuses an
// entry published past its bound, naming the entry, its length and why.
func TestCheckForNameLength(t *testing.T) {
	bounded := Carriage{MaxPublished: 10, MaxWhy: "the harness cuts longer ones"}
	c, err := ParseContract("t.yaml", []byte("format: metaharness.tool-contract/1\nentries: [{name: a, summary: M., input: {type: object}, renderings: {mcp: eleven_char}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, c.CheckFor(bounded, nil), RefuseNameTooLong, "entry a is published as eleven_char, 11 characters, and this kind passes on at most 10: the harness cuts longer ones")
	if err := c.CheckFor(carried, nil); err != nil {
		t.Errorf("no bound where the kind gives none: %v", err)
	}
	c, _ = ParseContract("t.yaml", []byte("format: metaharness.tool-contract/1\nentries: [{name: a, summary: M., input: {type: object}, renderings: {mcp: ten_charss}}]\n"))
	if err := c.CheckFor(bounded, nil); err != nil {
		t.Errorf("a name at the bound: %v", err)
	}
}

func TestCheckForReservedNames(t *testing.T) {
	for _, tc := range []struct {
		entry, want string
	}{
		{"{name: mcp, summary: M., input: {type: object}}", "published as mcp, a name the harness keeps"},
		{"{name: mcp__x, summary: M., input: {type: object}}", "published as mcp__x"},
		{"{name: a, summary: M., input: {type: object}, renderings: {mcp: mcp__a}}", "published as mcp__a"},
	} {
		c, err := ParseContract("t.yaml", []byte("format: metaharness.tool-contract/1\nentries: ["+tc.entry+"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		wantRefusal(t, c.CheckFor(reserving, nil), RefuseNameReserved, tc.want)
		if err := c.CheckFor(carried, nil); err != nil {
			t.Errorf("%s is reserved only where a kind says so: %v", tc.entry, err)
		}
	}
	c, _ := ParseContract("t.yaml", []byte("format: metaharness.tool-contract/1\nentries: [{name: mcpx, summary: M., input: {type: object}}]\n"))
	if err := c.CheckFor(reserving, nil); err != nil {
		t.Errorf("mcpx is not reserved: %v", err)
	}
}

// TestNameChecksReadThePatterns: the byte-at-a-time name checks say what
// the published patterns say, for names at each edge of the rules and for
// every short name over a small alphabet holding each class of character.
func TestNameChecksReadThePatterns(t *testing.T) {
	names := []string{"", "a", "fs.read", "fs_read-2", "Fs.read", "1fs", "fs read", "fs/read", "é", "a\n",
		strings.Repeat("a", 64), strings.Repeat("a", 65), "read_file", "READ-file", "tool.", ".tool"}
	const alphabet = "aZ0_.-/é"
	for _, a := range alphabet {
		for _, b := range alphabet {
			for _, c := range alphabet {
				names = append(names, string([]rune{a, b, c}))
			}
		}
	}
	for _, n := range names {
		if got, want := isEntryName(n), entryNamePattern().MatchString(n); got != want {
			t.Errorf("isEntryName(%q) = %t, the pattern says %t", n, got, want)
		}
		if got, want := isPublishedName(n), publishedNamePattern().MatchString(n); got != want {
			t.Errorf("isPublishedName(%q) = %t, the pattern says %t", n, got, want)
		}
	}
}
