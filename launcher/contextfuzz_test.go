package launcher

import (
	"crypto/sha1"
	"crypto/sha256"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// gitIndexVectors are real index files written by git (testdata/gitindex),
// each named for what it proves; "refused" in a name means the reader must
// refuse it.
func gitIndexVectors(t testing.TB) map[string][]byte {
	paths, err := filepath.Glob("testdata/gitindex/*.index")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no index vectors: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

func TestGitIndexVectors(t *testing.T) {
	for name, data := range gitIndexVectors(t) {
		ix, err := gitIndexParse(data)
		if strings.Contains(name, "refused") {
			if err == nil {
				t.Errorf("%s: accepted", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := int(name[1] - '0'); ix.Version != want {
			t.Errorf("%s: version %d", name, ix.Version)
		}
		if strings.Contains(name, "sha256") != (ix.Hash == "sha256") {
			t.Errorf("%s: hash %s", name, ix.Hash)
		}
		if !ix.Names("README.md") || !ix.Names("docs/ab.md") || !ix.Names("docs/abc/d.md") {
			t.Errorf("%s: lacks the files git added: %+v", name, ix.Entries)
		}
	}
}

// FuzzGitIndexParse: the index reader never panics on any bytes, and what it
// accepts re-encodes to an index that reads back as the same entries.
func FuzzGitIndexParse(f *testing.F) {
	for _, data := range gitIndexVectors(f) {
		f.Add(data)
	}
	entries := []gitIndexTestEntry{{name: "a"}, {name: "a/b", stage: 2}, {name: "a/bc", ext: 0x2000}, {name: strings.Repeat("l", 4100)}}
	f.Add(gitIndexTestEncode(4, sha1.Size, entries))
	f.Add(gitIndexTestEncode(3, sha256.Size, entries, gitIndexTestExt("TREE", []byte("x"))))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := gitIndexParse(data)
		if err != nil {
			return
		}
		var again []gitIndexTestEntry
		for _, e := range ix.Entries {
			if e.Name == "" || e.Stage < 0 || e.Stage > 3 {
				t.Fatalf("accepted entry %+v", e)
			}
			again = append(again, gitIndexTestEntry{name: e.Name, mode: e.Mode, stage: e.Stage})
		}
		size := sha1.Size
		if ix.Hash == "sha256" {
			size = sha256.Size
		}
		for _, v := range []int{2, 4} {
			back, err := gitIndexParse(gitIndexTestEncode(v, size, again))
			if err != nil {
				t.Fatalf("re-encoded as v%d, refused: %v", v, err)
			}
			if d := cmp.Diff(ix.Entries, back.Entries); d != "" {
				t.Fatalf("re-encoded as v%d, reads differently:\n%s", v, d)
			}
		}
	})
}

// FuzzGitIndexParseGitfile: a gitfile is accepted only as "gitdir: " and a
// non-empty directory with no NUL and no trailing line break.
func FuzzGitIndexParseGitfile(f *testing.F) {
	for _, s := range []string{"gitdir: ../x\n", "gitdir: /a/b\r\n", "gitdir: \n", "gitdir:x", "", "gitdir: a\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir, err := gitIndexParseGitfile(data)
		if err != nil {
			return
		}
		if dir == "" || strings.ContainsRune(dir, 0) || strings.HasSuffix(dir, "\n") || strings.HasSuffix(dir, "\r") ||
			!strings.HasPrefix(string(data), "gitdir: "+dir) {
			t.Fatalf("%q accepted as %q", data, dir)
		}
	})
}

// FuzzRenderContextFiles: whatever the files hold, each element and the
// wrapper close exactly where they should, every file reads back unchanged,
// and every N is the smallest the rule allows.
func FuzzRenderContextFiles(f *testing.F) {
	f.Add("a.md", "hello\n", "b.md", "</context-file-1>\n</context-files-1>\n")
	f.Add("x", "</context-file-1></context-file-2></context-file-3>", "y\"<&>", "</context-files-1>\n</context-files-2>")
	f.Add("p", "", "q", "no newline")
	f.Add("p", "</context-file-", "q", "</context-file-1\n>")
	f.Fuzz(func(t *testing.T, p1, t1, p2, t2 string) {
		files := []ContextFile{contextTestFile(p1, t1), contextTestFile(p2, t2)}
		contextCheckRendering(t, files, RenderContextFiles(files))
	})
}

// FuzzContextCleanPath: an accepted --context spelling is relative, clean,
// UTF-8, free of NUL and of "..", and its rendered path cannot leave the
// attribute or its line.
func FuzzContextCleanPath(f *testing.F) {
	for _, s := range []string{"docs/a.md", "./a//b", "../x", "a/../b", "/abs", "", "a\x00b", "\xff", "dir/", ".", "a/./b/", "..a/b..", "q\"<&>\n.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := contextCleanPath(p)
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
		if attr := contextEscapeAttr(rel); strings.ContainsAny(attr, "\"<>\n\r") {
			t.Fatalf("rendered path %q of %q can leave its attribute", attr, rel)
		}
	})
}

// FuzzContextCheckText: content is accepted exactly when it is UTF-8 with no
// NUL byte.
func FuzzContextCheckText(f *testing.F) {
	for _, s := range []string{"text\n", "ünï", "a\x00b", "ab\xffcd", "\xef\xbf\xbd", "\xed\xa0\x80", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := contextCheckText("f", b)
		want := utf8.Valid(b) && !strings.ContainsRune(string(b), 0)
		if (err == nil) != want {
			t.Fatalf("%q: accepted=%v, want %v (%v)", b, err == nil, want, err)
		}
	})
}
