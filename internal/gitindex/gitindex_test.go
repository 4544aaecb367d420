package gitindex

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/internal/gitindex/gittest"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// lsFiles is `git ls-files --stage` as entries, the oracle the parser
// is held to.
func lsFiles(t *testing.T, dir string) []Entry {
	t.Helper()
	var out []Entry
	for _, rec := range strings.Split(gittest.Git(t, dir, "ls-files", "--stage", "-z", "--sparse"), "\x00") {
		if rec == "" {
			continue
		}
		meta, name, _ := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		mode, _ := strconv.ParseUint(f[0], 8, 32)
		stage, _ := strconv.Atoi(f[2])
		out = append(out, Entry{Name: name, Mode: uint32(mode), Stage: stage})
	}
	return out
}

func loadIndex(t *testing.T, dir string) *Index {
	t.Helper()
	repo, err := FindRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Load(repo)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// Paths that share prefixes (for version 4's prefix compression), a deep
// one, and ones with bytes that need care.
var testFiles = map[string]string{
	"README.md":                    "readme\n",
	"docs/a.md":                    "a\n",
	"docs/ab.md":                   "ab\n",
	"docs/abc/d.md":                "d\n",
	"docs/abc/deeper/e.md":         "e\n",
	"docs/b.md":                    "b\n",
	"src/a long name with spaces":  "s\n",
	"src/ünïcödé.md":               "u\n",
	"src/x&y<z>.md":                "x\n",
	strings.Repeat("p/", 40) + "q": "deep\n",
}

func TestParseMatchesGitForEachVersion(t *testing.T) {
	for _, c := range []struct {
		name    string
		version int
		prepare func(t *testing.T, dir string)
		hash    string
		init    []string
	}{
		{name: "v2", version: 2, hash: "sha1"},
		{name: "v3 with intent-to-add and skip-worktree", version: 3, hash: "sha1", prepare: func(t *testing.T, dir string) {
			gittest.WriteFiles(t, dir, map[string]string{"docs/intent.md": "later\n"})
			gittest.Git(t, dir, "add", "-N", "docs/intent.md")
			gittest.Git(t, dir, "update-index", "--skip-worktree", "docs/b.md")
		}},
		{name: "v4", version: 4, hash: "sha1", prepare: func(t *testing.T, dir string) {
			gittest.Git(t, dir, "update-index", "--index-version", "4")
		}},
		{name: "v4 with extended flags", version: 4, hash: "sha1", prepare: func(t *testing.T, dir string) {
			gittest.Git(t, dir, "update-index", "--index-version", "4")
			gittest.Git(t, dir, "update-index", "--skip-worktree", "docs/ab.md")
		}},
		{name: "v2 sha256", version: 2, hash: "sha256", init: []string{"--object-format=sha256"}},
		{name: "v4 sha256", version: 4, hash: "sha256", init: []string{"--object-format=sha256"}, prepare: func(t *testing.T, dir string) {
			gittest.Git(t, dir, "update-index", "--index-version", "4")
		}},
		{name: "optional extensions (TREE, UNTR)", version: 2, hash: "sha1", prepare: func(t *testing.T, dir string) {
			gittest.Git(t, dir, "commit", "-q", "-m", "tree extension")
			gittest.Git(t, dir, "update-index", "--untracked-cache")
			gittest.Git(t, dir, "status", "--porcelain")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := gittest.Repo(t, testFiles, false, c.init...)
			if c.prepare != nil {
				c.prepare(t, dir)
			}
			ix := loadIndex(t, dir)
			if ix.Version != c.version || ix.Hash != c.hash {
				t.Errorf("version %d %s, want %d %s", ix.Version, ix.Hash, c.version, c.hash)
			}
			if d := cmp.Diff(lsFiles(t, dir), ix.Entries); d != "" {
				t.Errorf("entries differ from git ls-files (-git +parsed):\n%s", d)
			}
			for name := range testFiles {
				if !ix.Has(name) {
					t.Errorf("index does not name %q", name)
				}
			}
			if ix.Has("docs") || ix.Has("docs/abc") || ix.Has("untracked.md") {
				t.Error("index names a directory or an untracked file")
			}
		})
	}
}

func TestConflictStagesAreNotNamed(t *testing.T) {
	dir := gittest.Repo(t, map[string]string{"c.md": "base\n", "calm.md": "calm\n"}, true)
	gittest.Git(t, dir, "checkout", "-q", "-b", "other")
	gittest.WriteFiles(t, dir, map[string]string{"c.md": "other\n"})
	gittest.Git(t, dir, "commit", "-q", "-am", "other")
	gittest.Git(t, dir, "checkout", "-q", "main")
	gittest.WriteFiles(t, dir, map[string]string{"c.md": "main\n"})
	gittest.Git(t, dir, "commit", "-q", "-am", "main")
	cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "merge", "-q", "other")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if err := cmd.Run(); err == nil {
		t.Fatal("the merge was meant to conflict")
	}
	ix := loadIndex(t, dir)
	if d := cmp.Diff(lsFiles(t, dir), ix.Entries); d != "" {
		t.Errorf("entries differ from git ls-files (-git +parsed):\n%s", d)
	}
	if ix.Has("c.md") {
		t.Error("a file only at stages 1–3 counts as named")
	}
	if !ix.Has("calm.md") {
		t.Error("the untouched file is not named")
	}
}

func TestSparseIndexDirectoriesParse(t *testing.T) {
	dir := gittest.Repo(t, testFiles, true)
	gittest.Git(t, dir, "sparse-checkout", "init", "--cone", "--sparse-index")
	gittest.Git(t, dir, "sparse-checkout", "set", "docs")
	ix := loadIndex(t, dir)
	if d := cmp.Diff(lsFiles(t, dir), ix.Entries); d != "" {
		t.Errorf("entries differ from git ls-files --sparse (-git +parsed):\n%s", d)
	}
	if !ix.Has("docs/abc/d.md") || ix.Has("src/ünïcödé.md") {
		t.Error("a sparse index must name the checked-out files and not the files folded into a directory entry")
	}
}

func TestSplitIndexIsRefusedWithRemedy(t *testing.T) {
	dir := gittest.Repo(t, testFiles, false)
	gittest.Git(t, dir, "update-index", "--split-index")
	repo, err := FindRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(repo)
	if err == nil || !strings.Contains(err.Error(), "--no-split-index") {
		t.Fatalf("split index: %v", err)
	}
}

func TestNoIndexYetIsEmpty(t *testing.T) {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q")
	if ix := loadIndex(t, dir); len(ix.Entries) != 0 {
		t.Errorf("fresh repository: %d entries", len(ix.Entries))
	}
}

// TestAnIndexThatIsNotAFileIsRefusedAtOnce: an index that is a named
// pipe (which a blocking open would wait on for good) or a link to
// /dev/zero (which a read to the size cap would spend a gigabyte on) is
// refused before anything is read.
func TestAnIndexThatIsNotAFileIsRefusedAtOnce(t *testing.T) {
	for name, make := range map[string]func(string) error{
		"named pipe":        func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			gittest.Git(t, dir, "init", "-q")
			p := filepath.Join(dir, ".git", "index")
			_ = os.Remove(p)
			if err := make(p); err != nil {
				t.Fatal(err)
			}
			repo, err := FindRepo(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(repo)
			if !errors.Is(err, inputfile.ErrNotRegular) || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("Load: %v", err)
			}
		})
	}
}

func TestDamagedChecksumIsRefused(t *testing.T) {
	dir := gittest.Repo(t, testFiles, false)
	p := filepath.Join(dir, ".git", "index")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("flipped bit: %v", err)
	}
}

func TestFindRepo(t *testing.T) {
	main := gittest.Repo(t, map[string]string{"a.md": "a\n", "sub/b.md": "b\n"}, true)
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("from a subdirectory", func(t *testing.T) {
		repo, err := FindRepo(filepath.Join(main, "sub"))
		if err != nil {
			t.Fatal(err)
		}
		if repo.Root != real(main) || repo.GitDir != filepath.Join(real(main), ".git") {
			t.Errorf("%+v", repo)
		}
		name, err := repo.PathOf(filepath.Join(main, "sub"), "b.md")
		if err != nil || name != "sub/b.md" {
			t.Errorf("repo path %q, %v", name, err)
		}
	})

	t.Run("a .git directory without HEAD is passed over, as git does", func(t *testing.T) {
		inner := filepath.Join(main, "sub", "fake")
		if err := os.MkdirAll(filepath.Join(inner, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		repo, err := FindRepo(inner)
		if err != nil || repo.Root != real(main) {
			t.Errorf("%+v, %v", repo, err)
		}
	})

	t.Run("linked worktree uses its own index", func(t *testing.T) {
		wt := filepath.Join(t.TempDir(), "wt")
		gittest.Git(t, main, "worktree", "add", "-q", "-b", "side", wt)
		gittest.WriteFiles(t, wt, map[string]string{"only-here.md": "w\n"})
		gittest.Git(t, wt, "add", "only-here.md")
		repo, err := FindRepo(wt)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(filepath.Dir(repo.GitDir)) != "worktrees" {
			t.Errorf("worktree git dir %s is not under .git/worktrees", repo.GitDir)
		}
		ix, err := Load(repo)
		if err != nil {
			t.Fatal(err)
		}
		if !ix.Has("only-here.md") || !ix.Has("sub/b.md") {
			t.Error("the worktree index lacks its files")
		}
		if loadIndex(t, main).Has("only-here.md") {
			t.Error("the main index names a file added only in the worktree")
		}
	})

	for _, c := range []struct {
		name   string
		gitdir func(store string) string
	}{
		{"hand-made gitfile, relative", func(store string) string { return "gitdir: ../store/repo.git\n" }},
		{"hand-made gitfile, absolute, CRLF", func(store string) string { return "gitdir: " + store + "/repo.git\r\n" }},
		{"hand-made gitfile, no line break", func(store string) string { return "gitdir: ../store/repo.git" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			work := filepath.Join(parent, "work")
			store := filepath.Join(parent, "store")
			gittest.Git(t, parent, "init", "-q", "work")
			gittest.WriteFiles(t, work, map[string]string{"x/y.md": "y\n"})
			gittest.Git(t, work, "add", "x/y.md")
			if err := os.MkdirAll(store, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(work, ".git"), filepath.Join(store, "repo.git")); err != nil {
				t.Fatal(err)
			}
			gittest.WriteFiles(t, work, map[string]string{".git": c.gitdir(store)})
			repo, err := FindRepo(filepath.Join(work, "x"))
			if err != nil {
				t.Fatal(err)
			}
			if repo.Root != real(work) || real(repo.GitDir) != real(filepath.Join(store, "repo.git")) {
				t.Errorf("%+v", repo)
			}
			if ix, err := Load(repo); err != nil || !ix.Has("x/y.md") {
				t.Errorf("index through the gitfile: %v", err)
			}
		})
	}

	t.Run("bad gitfiles are errors, not a walk further up", func(t *testing.T) {
		for _, body := range []string{"nonsense\n", "gitdir: \n", "gitdir: missing-dir\n", "gitdir: a.md\n"} {
			dir := filepath.Join(main, "sub", "bad")
			gittest.WriteFiles(t, dir, map[string]string{".git": body, "a.md": "a"})
			if _, err := FindRepo(dir); err == nil || err == ErrNoRepo {
				t.Errorf("gitfile %q: %v", body, err)
			}
		}
	})

	t.Run("no repository", func(t *testing.T) {
		if _, err := FindRepo(t.TempDir()); err != ErrNoRepo {
			t.Errorf("%v", err)
		}
	})
}

// testEntry is an entry for the synthetic index encoder.
type testEntry struct {
	name    string
	mode    uint32 // 0 means 0o100644
	stage   int
	ext     uint16 // extended flags; set implies the extended bit
	nameLen int    // the length in flags; 0 means the real one (capped)
}

// testEncode writes an index the way git lays it out, for the cases
// git cannot be made to write (long names, damaged fields, extensions).
func testEncode(version, hashSize int, entries []testEntry, exts ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(version))
	binary.Write(&b, binary.BigEndian, uint32(len(entries)))
	prev := ""
	for _, e := range entries {
		start := b.Len()
		stat := make([]byte, statBytes)
		mode := e.mode
		if mode == 0 {
			mode = 0o100644
		}
		binary.BigEndian.PutUint32(stat[modeOffset:], mode)
		b.Write(stat)
		b.Write(make([]byte, hashSize))
		n := e.nameLen
		if n == 0 {
			n = min(len(e.name), flagNameLen)
		}
		flags := uint16(n) | uint16(e.stage)<<12
		if e.ext != 0 {
			flags |= flagExtended
		}
		binary.Write(&b, binary.BigEndian, flags)
		if e.ext != 0 {
			binary.Write(&b, binary.BigEndian, e.ext)
		}
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(e.name) && prev[common] == e.name[common] {
				common++
			}
			b.Write(testVarint(uint64(len(prev) - common)))
			b.WriteString(e.name[common:])
			b.WriteByte(0)
		} else {
			b.WriteString(e.name)
			size := b.Len() - start
			b.Write(make([]byte, (size+8)&^7-size))
		}
		prev = e.name
	}
	for _, x := range exts {
		b.Write(x)
	}
	body := b.Bytes()
	if hashSize == sha256.Size {
		s := sha256.Sum256(body)
		return append(body, s[:]...)
	}
	s := sha1.Sum(body)
	return append(body, s[:]...)
}

// testVarint is git's encode_varint.
func testVarint(v uint64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(v & 0x7f)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		pos--
		buf[pos] = 0x80 | byte(v&0x7f)
	}
	return buf[pos:]
}

func testExt(sig string, data []byte) []byte {
	out := append([]byte(sig), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(out[4:], uint32(len(data)))
	return append(out, data...)
}

func TestVarintRoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 16383, 16384, 16511, 1 << 20, 1<<57 - 1} {
		enc := testVarint(v)
		got, n := varint(append(enc, 'x'))
		if got != v || n != len(enc) {
			t.Errorf("%d: decoded %d from %d bytes of %x", v, got, n, enc)
		}
	}
	if _, n := varint([]byte{0x80}); n != 0 {
		t.Error("a cut-off varint decoded")
	}
	if _, n := varint(bytes.Repeat([]byte{0xff}, 12)); n != 0 {
		t.Error("an overflowing varint decoded")
	}
}

func TestSynthetic(t *testing.T) {
	long := strings.Repeat("l", 5000)
	ok := []testEntry{{name: "a"}, {name: "a/b"}, {name: "a/bc", ext: 0x4000}, {name: long}, {name: long + "/x"}}
	for _, v := range []int{3, 4} {
		for _, hs := range []int{sha1.Size, sha256.Size} {
			ix, err := Parse(testEncode(v, hs, ok, testExt("ZZZZ", []byte("cache")), testExt("sdir", nil)))
			if err != nil {
				t.Fatalf("v%d hash %d: %v", v, hs, err)
			}
			if len(ix.Entries) != len(ok) || !ix.Has(long+"/x") || !ix.Has("a/bc") {
				t.Errorf("v%d hash %d: %+v", v, hs, ix.Entries)
			}
		}
	}
	zeroTrailer := testEncode(2, sha1.Size, []testEntry{{name: "z"}})
	clear(zeroTrailer[len(zeroTrailer)-sha1.Size:])
	if ix, err := Parse(zeroTrailer); err != nil || !ix.Has("z") {
		t.Errorf("index.skipHash (zero trailer): %v", err)
	}

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"no signature", []byte("DIRX\x00\x00\x00\x02\x00\x00\x00\x00"), "DIRC"},
		{"version 5", testEncode(5, sha1.Size, nil), "version 5"},
		{"extended flags in v2", testEncode(2, sha1.Size, []testEntry{{name: "a", ext: 0x4000}}), "extended flags"},
		{"unknown extended flag", testEncode(3, sha1.Size, []testEntry{{name: "a", ext: 0x1000}}), "unknown extended"},
		{"name length disagrees", testEncode(2, sha1.Size, []testEntry{{name: "abc", nameLen: 2}}), "flags say 2"},
		{"empty name", testEncode(2, sha1.Size, []testEntry{{name: ""}}), "empty path"},
		{"split index", testEncode(2, sha1.Size, []testEntry{{name: "a"}}, testExt("link", make([]byte, 20))), "--no-split-index"},
		{"unknown required extension", testEncode(2, sha1.Size, []testEntry{{name: "a"}}, testExt("abcd", nil)), `"abcd"`},
		{"extension past the end", testEncode(2, sha1.Size, []testEntry{{name: "a"}}, []byte("TREE\x00\x00\x01\x00")), "claims 256"},
		{"stray bytes", testEncode(2, sha1.Size, []testEntry{{name: "a"}}, []byte("TRE")), "stray"},
		{"more entries claimed than present", func() []byte {
			d := testEncode(2, sha1.Size, []testEntry{{name: "a"}})
			d[11] = 2
			s := sha1.Sum(d[:len(d)-sha1.Size])
			copy(d[len(d)-sha1.Size:], s[:])
			return d
		}(), "entry 2 of 2 is cut off"},
		{"v4 strips more than the previous path", func() []byte {
			d := testEncode(4, sha1.Size, []testEntry{{name: "a"}})
			d[12+statBytes+sha1.Size+2] = 5 // the strip count of the first entry
			s := sha1.Sum(d[:len(d)-sha1.Size])
			copy(d[len(d)-sha1.Size:], s[:])
			return d
		}(), "strips 5 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestParseGitfile(t *testing.T) {
	for in, want := range map[string]string{
		"gitdir: ../x\n":              "../x",
		"gitdir: /abs/x\r\n":          "/abs/x",
		"gitdir: with space \n":       "with space ",
		"gitdir: a\n\n\r":             "a",
		"gitdir: ../.git/worktrees/w": "../.git/worktrees/w",
	} {
		got, err := ParseGitfile([]byte(in))
		if err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "gitdir:x", "gitdir: \n", "GITDIR: x", "gitdir: a\x00b"} {
		if got, err := ParseGitfile([]byte(in)); err == nil {
			t.Errorf("%q accepted as %q", in, got)
		}
	}
}
