package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"
)

// TestReadmeVerbTable fails when the README's verb table and the binary's
// verbs disagree (SPEC §3.1).
func TestReadmeVerbTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Verbs\n")
	if !ok {
		t.Fatal("README.md has no '## Verbs' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}

	parser, err := kong.New(&cli{}, vars())
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, n := range parser.Model.Children {
		if !n.Hidden {
			built = append(built, n.Name)
		}
	}
	if len(built) != 8 {
		t.Errorf("the binary has %d verbs, SPEC §3.1 says eight: %v", len(built), built)
	}
	if diff := cmp.Diff(built, documented); diff != "" {
		t.Errorf("README verb table and binary disagree (-binary +README):\n%s", diff)
	}
}
