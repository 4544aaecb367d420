package contextfile

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRender: whatever the files hold, each element and the
// wrapper close exactly where they should, every file reads back unchanged,
// and every N is the smallest the rule allows.
func FuzzRender(f *testing.F) {
	f.Add("a.md", "hello\n", "b.md", "</context-file-1>\n</context-files-1>\n")
	f.Add("x", "</context-file-1></context-file-2></context-file-3>", "y\"<&>", "</context-files-1>\n</context-files-2>")
	f.Add("p", "", "q", "no newline")
	f.Add("p", "</context-file-", "q", "</context-file-1\n>")
	f.Fuzz(func(t *testing.T, p1, t1, p2, t2 string) {
		files := []File{testFile(p1, t1), testFile(p2, t2)}
		checkRendering(t, files, Render(files))
	})
}

// FuzzCleanPath: an accepted --context spelling is relative, clean,
// UTF-8, free of NUL and of "..", and its rendered path cannot leave the
// attribute or its line.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"docs/a.md", "./a//b", "../x", "a/../b", "/abs", "", "a\x00b", "\xff", "dir/", ".", "a/./b/", "..a/b..", "q\"<&>\n.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := cleanPath(p)
		if err != nil {
			return
		}
		if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || !utf8.ValidString(rel) || strings.ContainsRune(rel, 0) {
			t.Fatalf("%q accepted as %q", p, rel)
		}
		for _, part := range strings.Split(rel, "/") {
			if part == ".." {
				t.Fatalf("%q accepted as %q, which has ..", p, rel)
			}
		}
		if attr := escapeAttr(rel); strings.ContainsAny(attr, "\"<>\n\r") {
			t.Fatalf("rendered path %q of %q can leave its attribute", attr, rel)
		}
	})
}

// FuzzCheckText: content is accepted exactly when it is UTF-8 with no
// NUL byte.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{"text\n", "ünï", "a\x00b", "ab\xffcd", "\xef\xbf\xbd", "\xed\xa0\x80", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkText("f", b)
		want := utf8.Valid(b) && !strings.ContainsRune(string(b), 0)
		if (err == nil) != want {
			t.Fatalf("%q: accepted=%v, want %v (%v)", b, err == nil, want, err)
		}
	})
}
