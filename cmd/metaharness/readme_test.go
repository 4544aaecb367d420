package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"
	"github.com/metaharness/metaharness/attest"
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

// TestReadmeRowTable fails when the README's table of the attestation's
// rows and the floor's own table disagree.
func TestReadmeRowTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## The attestation's rows\n")
	if !ok {
		t.Fatal("README.md has no '## The attestation's rows' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| (H[0-9]+[ab]?) \| (.+?) \| (record|launch|effect) \| (gating|advisory) \|$`)
	var documented, built []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented = append(documented, strings.Join(m[1:], " / "))
	}
	for _, r := range attest.Rows {
		id := r.ID.String()
		built = append(built, strings.ToUpper(id[:1])+id[1:]+" / "+r.Label+" / "+r.Assertion+" / "+r.Severity)
	}
	if diff := cmp.Diff(built, documented); diff != "" {
		t.Errorf("README row table and attest.Rows disagree (-attest +README):\n%s", diff)
	}
}

// readmeSection is the README's text under heading (a whole line, such as
// "## Verbs"), up to the next heading of the same or a higher level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q heading", heading)
	}
	level, _, _ := strings.Cut(heading, " ")
	for i := len(level); i >= 2; i-- {
		section, _, _ = strings.Cut(section, "\n"+strings.Repeat("#", i)+" ")
	}
	return section
}

// fencedBlocks are the bodies of the ```lang blocks in text, in order.
func fencedBlocks(text, lang string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```"+regexp.QuoteMeta(lang)+"\n(.*?)^```$").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}
