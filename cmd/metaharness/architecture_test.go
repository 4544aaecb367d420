package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArchitectureListsEveryPackage fails when docs/architecture.md's
// package table and the module's packages disagree.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9/]+)/` \\|").FindAllStringSubmatch(string(doc), -1) {
		listed = append(listed, m[1])
	}
	var built []string
	root := filepath.Join("..", "..")
	err = ownSources(root, func(path string) error {
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if rel != "." && !slices.Contains(built, rel) {
			built = append(built, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(built)
	slices.Sort(listed)
	if d := cmp.Diff(built, listed); d != "" {
		t.Errorf("docs/architecture.md and the module's packages disagree (-module +doc):\n%s", d)
	}
}

// ownSources calls visit with each Go file of the module's own code below
// root: no test file, nothing under testdata, node_modules or a dot
// directory.
func ownSources(root string, visit func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return visit(path)
	})
}
