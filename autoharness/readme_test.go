package autoharness

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeShowsTheClient: the README's section on the client shows the
// code of Example (which compiles with the package) and the step of the
// example workflow (which cmd/auto-harness's TestExampleDispatchWorkflow
// runs), as they are, so that neither drifts.
func TestReadmeShowsTheClient(t *testing.T) {
	readme := readText(t, "../README.md")
	_, section, ok := strings.Cut(readme, "\n## Auto Harness: handing sessions to a fleet\n")
	if !ok {
		t.Fatal("README.md has no section '## Auto Harness: handing sessions to a fleet'")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	block := func(lang string) string {
		m := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$").FindStringSubmatch(section)
		if m == nil {
			t.Fatalf("the section has no %s block", lang)
		}
		return m[1]
	}
	example := readText(t, "example_test.go")
	if !strings.Contains(example, indent(block("go"), "\t\t")) {
		t.Errorf("the README's Go block is not Example's code (autoharness/example_test.go), indented as there:\n%s", block("go"))
	}
	workflow := readText(t, "../examples/auto-harness/dispatch-mh-claude.yml")
	if !strings.Contains(workflow, indent(block("yaml"), "      ")) {
		t.Errorf("the README's workflow step is not the step of examples/auto-harness/dispatch-mh-claude.yml:\n%s", block("yaml"))
	}
}

func readText(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// indent is text with prefix before each of its lines.
func indent(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if l != "" && l != "\n" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
