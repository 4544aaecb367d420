package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/autoharness/actions"
)

// TestDispatchHelpListsEveryInput: `auto-harness dispatch --help` names
// the variable of every input of the Action, each on a line of its own.
func TestDispatchHelpListsEveryInput(t *testing.T) {
	for _, in := range actions.Inputs {
		if !regexp.MustCompile(`(?m)^  ` + in.Env + ` `).MatchString(dispatchUsage) {
			t.Errorf("dispatch --help does not list %s (input %s)", in.Env, in.Name)
		}
	}
}

// commands are the binary's commands as kong has them, in order: each
// leaf's path ("host inventory get").
func commands(t *testing.T) []string {
	t.Helper()
	parser, err := kong.New(&cli{}, kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		leaf := true
		for _, c := range n.Children {
			if c.Type == kong.CommandNode {
				leaf = false
				walk(c, strings.TrimSpace(path+" "+c.Name))
			}
		}
		if leaf && path != "" {
			out = append(out, path)
		}
	}
	walk(parser.Model.Node, "")
	return out
}

// TestHelpListsEveryCommand: the help's Usage section has one synopsis for
// each command the binary has, in the same order, and none for a command
// it lacks.
func TestHelpListsEveryCommand(t *testing.T) {
	built := commands(t)
	known := map[string]bool{}
	for _, c := range built {
		words := strings.Fields(c)
		for i := range words {
			known[strings.Join(words[:i+1], " ")] = true
		}
	}
	_, section, ok := strings.Cut(usage, "\nUsage:\n")
	if !ok {
		t.Fatal("the help has no Usage section")
	}
	section, _, _ = strings.Cut(section, "\n\n")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		rest, ok := strings.CutPrefix(line, "  auto-harness ")
		if !ok {
			continue
		}
		path := ""
		for _, w := range strings.Fields(rest) {
			next := strings.TrimSpace(path + " " + w)
			if !known[next] {
				break
			}
			path = next
		}
		if path != "" {
			listed = append(listed, path)
		}
	}
	if diff := cmp.Diff(built, listed); diff != "" {
		t.Errorf("the help's synopses and the binary's commands disagree (-binary +help):\n%s", diff)
	}
}

// TestReadmeCommandTable: the README's table of auto-harness's commands
// lists the binary's commands, in order.
func TestReadmeCommandTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### The operator CLI: `auto-harness`\n")
	if !ok {
		t.Fatal("README.md has no '### The operator CLI: `auto-harness`' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `auto-harness ([a-z -]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if diff := cmp.Diff(commands(t), documented); diff != "" {
		t.Errorf("the README's command table and the binary disagree (-binary +README):\n%s", diff)
	}
}
