package contextfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/internal/gitindex/gittest"
	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// openers runs a test once through openat2 and once through the walk
// that stands in for it where the kernel has no openat2, and reports how
// often the kernel's openat2 was asked.
func openers(t *testing.T, f func(t *testing.T, openat2Calls *int)) {
	t.Run("openat2", func(t *testing.T) {
		if _, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}); errors.Is(err, unix.ENOSYS) {
			t.Skip("this kernel has no openat2; the walk variant covers the loader")
		}
		calls := 0
		real := openat2
		openat2 = func(dirfd int, path string, how *unix.OpenHow) (int, error) {
			calls++
			return real(dirfd, path, how)
		}
		t.Cleanup(func() { openat2 = real })
		f(t, &calls)
	})
	t.Run("walk without openat2", func(t *testing.T) {
		calls := 0
		real := openat2
		openat2 = func(int, string, *unix.OpenHow) (int, error) {
			calls++
			return -1, unix.ENOSYS
		}
		t.Cleanup(func() { openat2 = real })
		f(t, &calls)
	})
}

// testTree builds a repository with every kind of thing --context
// must accept or refuse, and returns its root.
func testTree(t *testing.T) string {
	t.Helper()
	dir := gittest.Repo(t, map[string]string{
		"ok.md":          "hello\n",
		"docs/b.md":      "b text",
		"docs/deep/c.md": "c\n",
		"bin.dat":        "ab\xffcd",
		"nul.txt":        "a\x00b",
		"a&b.md":         "amp\n",
	}, false)
	outside := filepath.Join(t.TempDir(), "outside.md")
	gittest.WriteFiles(t, filepath.Dir(outside), map[string]string{"outside.md": "secret\n"})
	for link, target := range map[string]string{
		"link.md":     "ok.md",
		"linkdir":     "docs",
		"docs/up.md":  "../ok.md",
		"escape.md":   outside,
		"dangling.md": "nowhere.md",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, dir, "add", "-A") // the links are in the index too: refused for being links
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFiles(t, dir, map[string]string{"untracked.md": "not added\n", "docs/untracked.md": "no\n"})
	return dir
}

func wantRefusal(t *testing.T, err error, code exit.Name, inMessage ...string) {
	t.Helper()
	var r *exit.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want refusal %s, got %v", code, err)
	}
	if r.Name != code {
		t.Fatalf("want refusal %s, got %s: %s", code, r.Name, r.Message)
	}
	for _, s := range inMessage {
		if !strings.Contains(r.Message, s) {
			t.Errorf("refusal %s does not mention %q: %s", code, s, r.Message)
		}
	}
}

func TestLoadRefusals(t *testing.T) {
	dir := testTree(t)
	cases := []struct {
		name  string
		cwd   string // relative to the tree; "-" for no --cwd
		paths []string
		code  exit.Name
		say   []string
	}{
		{"no --cwd", "-", []string{"ok.md"}, "context-needs-cwd", []string{"ok.md", "--cwd DIR"}},
		{"17 files, refused before any is opened", ".", strings.Split(strings.Repeat("missing.md ", 17), " ")[:17], "context-too-many-files", []string{"17", "at most 16"}},
		{"empty path", ".", []string{""}, "context-path-invalid", []string{"empty path"}},
		{"NUL in path", ".", []string{"ok\x00.md"}, "context-path-invalid", []string{"NUL"}},
		{"path not UTF-8", ".", []string{"\xff.md"}, "context-path-invalid", []string{"not UTF-8"}},
		{"absolute path", ".", []string{"/etc/hostname"}, "context-path-escapes", []string{"/etc/hostname", "absolute", "relative to --cwd"}},
		{"..", ".", []string{"../ok.md"}, "context-path-escapes", []string{"../ok.md", "without .."}},
		{".. that would stay inside", ".", []string{"docs/../ok.md"}, "context-path-escapes", []string{"docs/../ok.md"}},
		{"spelling checked for every path before any file is opened", ".", []string{"missing.md", "/abs"}, "context-path-escapes", []string{"/abs"}},
		{"symlink to a file inside", ".", []string{"link.md"}, "context-symlink", []string{"link.md", "symbolic link", "real path"}},
		{"symlink directory on the path", ".", []string{"linkdir/b.md"}, "context-symlink", []string{"linkdir/b.md"}},
		{"symlink with .. in its target", ".", []string{"docs/up.md"}, "context-symlink", []string{"docs/up.md"}},
		{"symlink out of the tree", ".", []string{"escape.md"}, "context-symlink", []string{"escape.md"}},
		{"dangling symlink", ".", []string{"dangling.md"}, "context-symlink", []string{"dangling.md"}},
		{"symlink as the last of several", ".", []string{"ok.md", "docs/b.md", "link.md"}, "context-symlink", []string{"link.md"}},
		{"directory", ".", []string{"docs"}, "context-not-regular-file", []string{"docs", "directory"}},
		{"directory with a trailing slash", ".", []string{"docs/"}, "context-not-regular-file", []string{"docs/"}},
		{"the --cwd itself", ".", []string{"."}, "context-not-regular-file", []string{"directory"}},
		{"named pipe (no blocking open)", ".", []string{"fifo"}, "context-not-regular-file", []string{"fifo", "named pipe"}},
		{"not UTF-8", ".", []string{"bin.dat"}, "context-not-utf8", []string{"bin.dat", "offset 2"}},
		{"NUL byte", ".", []string{"nul.txt"}, "context-not-utf8", []string{"nul.txt", "NUL", "offset 1"}},
		{"untracked", ".", []string{"untracked.md"}, "context-not-in-git-index", []string{"untracked.md", "git add"}},
		{"untracked, from a subdirectory --cwd", "docs", []string{"untracked.md"}, "context-not-in-git-index", []string{"docs/untracked.md"}},
		{"the same file twice", ".", []string{"ok.md", "docs/b.md", "./ok.md"}, "context-duplicate", []string{"ok.md and --context ./ok.md name the same file", "once"}},
		{"missing", ".", []string{"missing.md"}, "context-unreadable", []string{"missing.md", "exists"}},
		{"a file used as a directory", ".", []string{"ok.md/x"}, "context-unreadable", []string{"ok.md/x"}},
		{"--cwd that does not exist", "nowhere", []string{"ok.md"}, "context-unreadable", []string{"nowhere"}},
	}
	openers(t, func(t *testing.T, openat2Calls *int) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				cwd := ""
				if c.cwd != "-" {
					cwd = filepath.Join(dir, c.cwd)
				}
				files, err := Load(cwd, c.paths)
				if files != nil {
					t.Errorf("refused load returned files: %+v", files)
				}
				wantRefusal(t, err, c.code, c.say...)
				if got := exit.Line(err); !strings.HasPrefix(got, "metaharness: "+string(c.code)+": ") {
					t.Errorf("stderr line %q", got)
				}
			})
		}
		if *openat2Calls == 0 {
			t.Error("openat2 was never asked")
		}
	})
}

func TestLoadNotInAnyRepository(t *testing.T) {
	dir := t.TempDir()
	gittest.WriteFiles(t, dir, map[string]string{"a.md": "a\n"})
	_, err := Load(dir, []string{"a.md"})
	wantRefusal(t, err, "context-not-in-git-index", "a.md", "not in a git repository")
}

func TestLoadBrokenIndexOrGitfile(t *testing.T) {
	dir := gittest.Repo(t, map[string]string{"a.md": "a\n"}, false)
	idx := filepath.Join(dir, ".git", "index")
	data, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	data[20] ^= 1
	if err := os.WriteFile(idx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir, []string{"a.md"})
	wantRefusal(t, err, "context-git-index-unreadable", "a.md", "checksum")

	copyDir := t.TempDir()
	gittest.WriteFiles(t, copyDir, map[string]string{"a.md": "a\n", ".git": "gitdir: ../gone.git\n"})
	_, err = Load(copyDir, []string{"a.md"})
	wantRefusal(t, err, "context-git-index-unreadable", "a.md", "gone.git")
}

func TestLoadReadsOnceAndDigests(t *testing.T) {
	dir := testTree(t)
	openers(t, func(t *testing.T, _ *int) {
		files, err := Load(dir, []string{"ok.md", "./docs//b.md", "docs/deep/./c.md", "a&b.md"})
		if err != nil {
			t.Fatal(err)
		}
		var got []record.ContextFile
		for _, f := range files {
			sum := sha256.Sum256([]byte(f.Text))
			if f.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: digest %s is not of the text kept", f.Path, f.SHA256)
			}
			got = append(got, record.ContextFile{Path: f.Path, Bytes: uint64(f.Bytes()), Channel: "append-system-prompt"})
		}
		want := []record.ContextFile{
			{Path: "ok.md", Bytes: 6, Channel: "append-system-prompt"},
			{Path: "docs/b.md", Bytes: 6, Channel: "append-system-prompt"},
			{Path: "docs/deep/c.md", Bytes: 2, Channel: "append-system-prompt"},
			{Path: "a&b.md", Bytes: 4, Channel: "append-system-prompt"},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Error(d)
		}
		if files[0].Text != "hello\n" || files[1].Text != "b text" {
			t.Errorf("texts: %q %q", files[0].Text, files[1].Text)
		}
		recs := Records(files, "append-system-prompt")
		if recs[3].SHA256 != files[3].SHA256 || recs[3].Path != "a&b.md" || recs[3].Channel != "append-system-prompt" {
			t.Errorf("record: %+v", recs[3])
		}
	})
}

func TestLoadFromSubdirectoryAndWorktree(t *testing.T) {
	dir := testTree(t)
	files, err := Load(filepath.Join(dir, "docs"), []string{"deep/c.md"})
	if err != nil || files[0].Path != "deep/c.md" {
		t.Fatalf("%+v, %v", files, err)
	}

	main := gittest.Repo(t, map[string]string{"a.md": "a\n"}, true)
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, main, "worktree", "add", "-q", "-b", "side", wt)
	for _, d := range []string{main, wt} {
		gittest.WriteFiles(t, d, map[string]string{"new.md": "new\n"})
	}
	gittest.Git(t, wt, "add", "new.md")
	if _, err := Load(wt, []string{"new.md", "a.md"}); err != nil {
		t.Errorf("worktree (a .git gitfile) with the file in its own index: %v", err)
	}
	_, err = Load(main, []string{"new.md"})
	wantRefusal(t, err, "context-not-in-git-index", "new.md")
}

func TestLoadScratchCopyWithGitfile(t *testing.T) {
	// An embedder's scratch copy: the tree copied elsewhere, with a .git
	// gitfile pointing back at the repository's git directory.
	orig := gittest.Repo(t, map[string]string{"notes/n.md": "n\n"}, true)
	scratch := t.TempDir()
	gittest.WriteFiles(t, scratch, map[string]string{
		"notes/n.md":       "n\n",
		"notes/unknown.md": "u\n",
		".git":             "gitdir: " + filepath.Join(orig, ".git") + "\n",
	})
	if _, err := Load(scratch, []string{"notes/n.md"}); err != nil {
		t.Errorf("scratch copy: %v", err)
	}
	_, err := Load(scratch, []string{"notes/unknown.md"})
	wantRefusal(t, err, "context-not-in-git-index", "notes/unknown.md")
}

func TestLoadByteCap(t *testing.T) {
	// The cap counts content plus rendered path: "a&b.md" renders as
	// "a&amp;b.md", 10 bytes, so 65,526 bytes of content fit exactly.
	fill := func(n int) string { return strings.Repeat("x", n) }
	dir := gittest.Repo(t, map[string]string{
		"a&b.md":   fill(MaxBytes - len("a&amp;b.md")),
		"over.md":  fill(MaxBytes - len("over.md") + 1),
		"half1.md": fill(MaxBytes/2 - len("half1.md")),
		"half2.md": fill(MaxBytes/2 - len("half2.md")),
		"one.md":   "1",
		"huge.md":  fill(10 * MaxBytes),
	}, false)
	openers(t, func(t *testing.T, _ *int) {
		if _, err := Load(dir, []string{"a&b.md"}); err != nil {
			t.Errorf("exactly at the cap: %v", err)
		}
		if _, err := Load(dir, []string{"half1.md", "half2.md"}); err != nil {
			t.Errorf("two files exactly at the cap: %v", err)
		}
		_, err := Load(dir, []string{"over.md"})
		wantRefusal(t, err, "context-too-large", "over.md", "65536")
		_, err = Load(dir, []string{"half1.md", "half2.md", "one.md"})
		wantRefusal(t, err, "context-too-large", "one.md", "65536 used by the files before it")
		_, err = Load(dir, []string{"huge.md"})
		wantRefusal(t, err, "context-too-large", "huge.md")
	})
}

func TestOpenRetriesEAGAIN(t *testing.T) {
	dir := testTree(t)
	real := openat2
	t.Cleanup(func() { openat2 = real })
	fails := 2
	openat2 = func(dirfd int, path string, how *unix.OpenHow) (int, error) {
		if fails > 0 {
			fails--
			return -1, unix.EAGAIN
		}
		return real(dirfd, path, how)
	}
	if _, err := Load(dir, []string{"ok.md"}); err != nil {
		t.Errorf("two EAGAINs then success: %v", err)
	}
	openat2 = func(int, string, *unix.OpenHow) (int, error) { return -1, unix.EAGAIN }
	_, err := Load(dir, []string{"ok.md"})
	wantRefusal(t, err, "context-unreadable", "ok.md")
}

func TestRecordsAbsentWhenNoFiles(t *testing.T) {
	if Records(nil, "append-system-prompt") != nil {
		t.Error("no files must give a nil list, so that context_files is absent")
	}
	if files, err := Load("", nil); files != nil || err != nil {
		t.Errorf("no --context: %v, %v", files, err)
	}
}

// TestOpenBeneathRefusesEscapes holds both openers to their own
// contract, whatever Load checked before calling them.
func TestOpenBeneathRefusesEscapes(t *testing.T) {
	dir := testTree(t)
	dirfd, err := unix.Open(filepath.Join(dir, "docs"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	openers(t, func(t *testing.T, _ *int) {
		for _, rel := range []string{"../ok.md", "deep/../../ok.md", "/etc/hostname"} {
			if fd, err := openBeneath(dirfd, rel); !errors.Is(err, errEscapes) {
				if err == nil {
					unix.Close(fd)
				}
				t.Errorf("%s: %v, want errEscapes", rel, err)
			}
		}
		fd, err := openBeneath(dirfd, "deep/c.md")
		if err != nil {
			t.Fatalf("deep/c.md: %v", err)
		}
		unix.Close(fd)
	})
}
