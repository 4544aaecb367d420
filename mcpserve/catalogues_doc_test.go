package mcpserve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docBlock is one fenced block of docs/catalogues.md: its info string
// (```yaml contract, ```json call read_file, ```text answer, ```text file
// NOTES.md) split into words, and its body.
type docBlock struct {
	info []string
	body string
}

func catalogueDoc(t *testing.T) (string, []docBlock) {
	t.Helper()
	b, err := os.ReadFile("../docs/catalogues.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	for _, m := range regexp.MustCompile("(?ms)^```([^\n]*)\n(.*?)^```$").FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, docBlock{strings.Fields(m[1]), m[2]})
	}
	return string(b), blocks
}

// TestCataloguesDoc holds docs/catalogues.md to the code: its contract has
// one entry per performer this build has, each declaring exactly that
// performer's fields and requiring what the default surface requires; each
// performer's heading names its operation; the default verbs are the
// server's; and every worked call, run in order against the documented
// workspace (the contract's server, then the default verbs' with --writable
// and --allow-program echo), answers exactly the text shown, as an error
// where the doc says so.
func TestCataloguesDoc(t *testing.T) {
	doc, blocks := catalogueDoc(t)
	var contract *Contract
	for _, b := range blocks {
		if slices.Equal(b.info, []string{"yaml", "contract"}) {
			c, err := ParseContract("docs/catalogues.md", []byte(b.body))
			if err != nil {
				t.Fatalf("the doc's contract: %v", err)
			}
			contract = c
		}
	}
	if contract == nil {
		t.Fatal("docs/catalogues.md has no ```yaml contract block")
	}
	var names []string
	defaults := defaultEntries(true, nil)
	for _, e := range contract.Entries {
		names = append(names, e.Name)
		p, ok := performers[e.Name]
		if !ok {
			t.Errorf("the doc's contract has %s, which no performer performs", e.Name)
			continue
		}
		if d := cmp.Diff(p.fields, e.Fields()); d != "" {
			t.Errorf("%s: the doc's fields and the performer's disagree (-performer +doc):\n%s", e.Name, d)
		}
		want, _ := defaults.Entry(e.Name)
		if d := cmp.Diff(want.Required(), e.Required()); d != "" {
			t.Errorf("%s: the doc's required fields and the default surface's disagree (-code +doc):\n%s", e.Name, d)
		}
		heading := "### `" + e.Name + "` → `" + OperationOf(e.Name) + "`"
		if !strings.Contains(doc, "\n"+heading+"\n") {
			t.Errorf("docs/catalogues.md has no heading %q", heading)
		}
	}
	slices.Sort(names)
	if d := cmp.Diff(Performed(), names); d != "" {
		t.Errorf("the doc's contract and this build's performers disagree (-performers +doc):\n%s", d)
	}
	for _, v := range Verbs() {
		if !strings.Contains(doc, "\n### `"+v+"`\n") {
			t.Errorf("docs/catalogues.md has no heading for the default verb %s", v)
		}
	}

	ws := t.TempDir()
	open := func(opts Options) *Server {
		opts.Workspace = ws
		s, err := NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	var srv *Server
	calls := 0
	for i, b := range blocks {
		switch {
		case len(b.info) == 3 && b.info[0] == "text" && b.info[1] == "file":
			p := filepath.Join(ws, b.info[2])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
		case len(b.info) == 2 && b.info[0] == "text" && b.info[1] == "server-contract":
			srv = open(Options{Contract: contract, Writable: true})
		case len(b.info) == 2 && b.info[0] == "text" && b.info[1] == "server-verbs":
			srv = open(Options{Writable: true, AllowPrograms: []string{"echo"}})
		case len(b.info) == 3 && b.info[0] == "json" && b.info[1] == "call":
			if srv == nil {
				t.Fatalf("call %s comes before the doc starts a server", b.info[2])
			}
			if i+1 == len(blocks) || len(blocks[i+1].info) < 2 || blocks[i+1].info[1] != "answer" {
				t.Fatalf("call %s %s has no answer block after it", b.info[2], b.body)
			}
			calls++
			answer := blocks[i+1]
			wantErr := len(answer.info) == 3 && answer.info[2] == "error"
			text, isErr, err := srv.Call(context.Background(), b.info[2], json.RawMessage(b.body), "")
			if err != nil {
				t.Fatalf("call %s %s: %v", b.info[2], b.body, err)
			}
			if isErr != wantErr || text+"\n" != answer.body {
				t.Errorf("call %s %s answered (error=%t):\n%s\nthe doc shows (error=%t):\n%s", b.info[2], strings.TrimSpace(b.body), isErr, text, wantErr, answer.body)
			}
		}
	}
	if calls < len(Performed())+len(Verbs()) {
		t.Errorf("docs/catalogues.md works %d calls, fewer than one per performer and default verb", calls)
	}
}
