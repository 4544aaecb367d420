package gitindex

import (
	"crypto/sha1"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// indexVectors are real index files written by git (testdata),
// each named for what it proves; "refused" in a name means the reader must
// refuse it.
func indexVectors(t testing.TB) map[string][]byte {
	paths, err := filepath.Glob("testdata/*.index")
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

func TestVectors(t *testing.T) {
	for name, data := range indexVectors(t) {
		ix, err := Parse(data)
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
		if !ix.Has("README.md") || !ix.Has("docs/ab.md") || !ix.Has("docs/abc/d.md") {
			t.Errorf("%s: lacks the files git added: %+v", name, ix.Entries)
		}
	}
}

// FuzzParse: the index reader never panics on any bytes, and what it
// accepts re-encodes to an index that reads back as the same entries.
func FuzzParse(f *testing.F) {
	for _, data := range indexVectors(f) {
		f.Add(data)
	}
	entries := []testEntry{{name: "a"}, {name: "a/b", stage: 2}, {name: "a/bc", ext: 0x2000}, {name: strings.Repeat("l", 4100)}}
	f.Add(testEncode(4, sha1.Size, entries))
	f.Add(testEncode(3, sha256.Size, entries, testExt("TREE", []byte("x"))))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Parse(data)
		if err != nil {
			return
		}
		var again []testEntry
		for _, e := range ix.Entries {
			if e.Name == "" || e.Stage < 0 || e.Stage > 3 {
				t.Fatalf("accepted entry %+v", e)
			}
			again = append(again, testEntry{name: e.Name, mode: e.Mode, stage: e.Stage})
		}
		size := sha1.Size
		if ix.Hash == "sha256" {
			size = sha256.Size
		}
		for _, v := range []int{2, 4} {
			back, err := Parse(testEncode(v, size, again))
			if err != nil {
				t.Fatalf("re-encoded as v%d, refused: %v", v, err)
			}
			if d := cmp.Diff(ix.Entries, back.Entries); d != "" {
				t.Fatalf("re-encoded as v%d, reads differently:\n%s", v, d)
			}
		}
	})
}

// FuzzParseGitfile: a gitfile is accepted only as "gitdir: " and a
// non-empty directory with no NUL and no trailing line break.
func FuzzParseGitfile(f *testing.F) {
	for _, s := range []string{"gitdir: ../x\n", "gitdir: /a/b\r\n", "gitdir: \n", "gitdir:x", "", "gitdir: a\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir, err := ParseGitfile(data)
		if err != nil {
			return
		}
		if dir == "" || strings.ContainsRune(dir, 0) || strings.HasSuffix(dir, "\n") || strings.HasSuffix(dir, "\r") ||
			!strings.HasPrefix(string(data), "gitdir: "+dir) {
			t.Fatalf("%q accepted as %q", data, dir)
		}
	})
}
