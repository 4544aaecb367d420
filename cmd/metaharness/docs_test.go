package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the clone's root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// userDocs are the documents a user reads: README.md and docs/*.md.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
}

var (
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	// codeSpan is a path in backticks that begins with ../ or with one of
	// the clone's own top-level entries (checked below): a file the text
	// sends the reader to.
	codeSpan = regexp.MustCompile("`((?:\\.\\./)*[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*)`")
	// outside names a document that is not in the clone.
	outside = regexp.MustCompile(`\bSPEC\b|steering repository|reference notes`)
)

// TestDocsPointInside fails on any link or path in README.md or docs/*.md
// that does not resolve inside the repository: a markdown link to a file,
// directory or heading that is not there, a URL, a path in backticks
// (`../…`, or under one of the clone's top-level directories) naming
// nothing, or a mention of a document kept elsewhere (SPEC). Everything a
// user needs is in the clone.
func TestDocsPointInside(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	for _, doc := range userDocs(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, must(filepath.Abs(doc)))
		dir := filepath.Dir(must(filepath.Abs(doc)))
		prose := withoutFences(string(b))
		for _, m := range mdLink.FindAllStringSubmatch(prose, -1) {
			if why := resolveLink(root, dir, must(filepath.Abs(doc)), m[1]); why != "" {
				t.Errorf("%s: link %s %s", name, m[1], why)
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatch(prose, -1) {
			p := m[1]
			first, _, _ := strings.Cut(p, "/")
			switch {
			case strings.HasPrefix(p, "../"):
				if why := resolvePath(root, filepath.Join(dir, p)); why != "" {
					t.Errorf("%s: `%s` %s", name, p, why)
				}
			case top[first]:
				if why := resolvePath(root, filepath.Join(root, p)); why != "" {
					t.Errorf("%s: `%s` %s", name, p, why)
				}
			}
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d: %q names a document outside the repository: say what the reader needs here, or link a file of the clone", name, i+1, m)
			}
		}
	}
}

// TestEmbeddingShowsTheExamples: each Command docs/embedding.md shows in a
// json block is the shipped example of its kind (examples/auto-harness),
// byte for byte, and the doc names the daemon commit the host-daemon tests
// follow (daemonCommit), so that neither drifts from what is tested.
func TestEmbeddingShowsTheExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, "`"+daemonCommit+"`") {
		t.Errorf("docs/embedding.md does not name the daemon commit %s the host-daemon tests follow", daemonCommit)
	}
	shown := 0
	for _, m := range regexp.MustCompile("(?ms)^```json\n(.*?)^```$").FindAllStringSubmatch(doc, -1) {
		var c autoHarnessCommand
		if json.Unmarshal([]byte(m[1]), &c) != nil || len(c.Argv) < 3 {
			continue // not a Command
		}
		shown++
		example := filepath.Join(examplesDir, "auto-harness", "mh-"+c.Argv[2]+".command.json")
		want, err := os.ReadFile(example)
		if err != nil {
			t.Errorf("docs/embedding.md shows a Command for %q, which has no example: %v", c.Argv[2], err)
		} else if m[1] != string(want) {
			t.Errorf("docs/embedding.md's Command for %s differs from %s:\n%s", c.Argv[2], example, m[1])
		}
	}
	if shown == 0 {
		t.Error("docs/embedding.md shows no Command in a json block")
	}
}

// resolveLink says why a markdown link from doc does not resolve, or "".
func resolveLink(root, dir, doc, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "points outside the repository"
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := doc
	if path != "" {
		file = filepath.Join(dir, path)
		if why := resolvePath(root, file); why != "" {
			return why
		}
	}
	if anchor != "" {
		if !strings.HasSuffix(file, ".md") {
			return "has an anchor into a file that is not markdown"
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "names a heading in an unreadable file: " + err.Error()
		}
		if !hasHeading(string(b), anchor) {
			return "names a heading that is not there"
		}
	}
	return ""
}

// resolvePath says why path is not an existing file or directory inside
// root, or "".
func resolvePath(root, path string) string {
	rel, err := filepath.Rel(root, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "leads out of the repository"
	}
	if _, err := os.Stat(path); err != nil {
		return "names nothing in the repository"
	}
	// A built binary or a cache in the working copy is not in a clone.
	if err := exec.Command("git", "-C", root, "check-ignore", "-q", rel).Run(); err == nil {
		return "names a file git ignores, which a fresh clone does not have"
	}
	return ""
}

// hasHeading reports whether markdown text has a heading whose anchor (as
// GitHub makes it) is anchor.
func hasHeading(text, anchor string) bool {
	for _, line := range strings.Split(withoutFences(text), "\n") {
		h := strings.TrimLeft(line, "#")
		if len(h) == len(line) || !strings.HasPrefix(h, " ") {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				slug.WriteRune(r)
			case r == ' ':
				slug.WriteRune('-')
			}
		}
		if slug.String() == anchor {
			return true
		}
	}
	return false
}

// withoutFences is text with its fenced code blocks blanked out.
func withoutFences(text string) string {
	return regexp.MustCompile("(?ms)^```.*?^```$").ReplaceAllString(text, "")
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
