package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/internal/gitindex/gittest"
	"github.com/metaharness/metaharness/internal/treepath"
	"github.com/metaharness/metaharness/launcher/kind"
)

// linkedWorktree is a repository with one commit and a linked worktree of
// it (git worktree add, as a fleet's host makes them), returning both.
func linkedWorktree(t *testing.T) (repo, wt string) {
	t.Helper()
	repo = gittest.Repo(t, map[string]string{"README": "hi\n"}, true)
	wt = filepath.Join(t.TempDir(), "wt-1")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "session", wt)
	return treepath.Real(repo), wt
}

// TestFindGitDirsLinkedWorktree: a linked worktree's git directory and
// the repository's common directory, with the directories git writes to
// commit (launcher/kind's TestBindGit binds them into a view).
func TestFindGitDirsLinkedWorktree(t *testing.T) {
	repo, wt := linkedWorktree(t)
	g, err := findGitDirs(wt)
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(repo, ".git")
	want := &kind.GitDirs{GitDir: filepath.Join(common, "worktrees", "wt-1"), Common: common,
		Writable: []string{filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs")}}
	if g.GitDir != want.GitDir || g.Common != want.Common || !slices.Equal(g.Writable, want.Writable) {
		t.Fatalf("got %+v, want %+v", g, want)
	}
}

// TestFindGitDirsTrustsOnlyGitsOwnLinks: the child writes its worktree,
// and the worktree's git directory once it is bound, so a .git file or a
// back-link it changed must not lead a later run to bind anything else:
// each is refused with why, and nothing is bound; so is a whole
// repository named by a .git file, which names no worktree back. No .git
// file, or a .git directory inside the cwd, is no git directory to bind.
func TestFindGitDirsTrustsOnlyGitsOwnLinks(t *testing.T) {
	elsewhere := t.TempDir()
	gittest.WriteFiles(t, elsewhere, map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/x": "", "refs/x": ""})
	cases := []struct {
		name string
		edit func(t *testing.T, repo, wt string)
		want string
	}{
		{"the .git file names another repository", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(wt, ".git"), "gitdir: "+elsewhere+"\n")
		}, "a whole repository with no link back to this worktree"},
		{"a whole repository (git init --separate-git-dir)", func(t *testing.T, repo, wt string) {
			_ = os.Remove(filepath.Join(wt, ".git"))
			gittest.Git(t, wt, "init", "-q", "--separate-git-dir", filepath.Join(t.TempDir(), "sep.git"))
		}, "a whole repository with no link back to this worktree"},
		{"the .git file names no directory", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(wt, ".git"), "gitdir: /no/such/dir\n")
		}, "no directory here"},
		{"the .git file is no git link", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(wt, ".git"), "not a link\n")
		}, `does not start "gitdir: PATH"`},
		{"commondir moved elsewhere", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(repo, ".git", "worktrees", "wt-1", "commondir"), elsewhere+"\n")
		}, "is not one of the worktrees of its common directory"},
		{"the back-link names another worktree", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(repo, ".git", "worktrees", "wt-1", "gitdir"), filepath.Join(repo, ".git")+"\n")
		}, "not this worktree's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, wt := linkedWorktree(t)
			c.edit(t, repo, wt)
			g, err := findGitDirs(wt)
			if g != nil || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %+v, %v; want no dirs and an error saying %q", g, err, c.want)
			}
		})
	}
	repo := gittest.Repo(t, map[string]string{"README": "hi\n"}, true)
	for _, dir := range []string{repo, t.TempDir()} {
		if g, err := findGitDirs(dir); g != nil || err != nil {
			t.Errorf("%s: %+v, %v; want nothing to bind", dir, g, err)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzGitLink: whatever the child left in a git link file (its worktree's
// .git, the git directory's commondir and gitdir, which it may write),
// gitLink returns only what follows the prefix on the first line, never
// empty, and refuses a file past the bound.
func FuzzGitLink(f *testing.F) {
	f.Add([]byte("gitdir: /srv/repo/.git/worktrees/wt-1\n"), "gitdir: ")
	f.Add([]byte("../..\n"), "")
	f.Add([]byte("gitdir: \r\n\x00"), "gitdir: ")
	f.Fuzz(func(t *testing.T, content []byte, prefix string) {
		p := filepath.Join(t.TempDir(), "link")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := gitLink(p, prefix)
		if err != nil {
			return
		}
		first, _, _ := strings.Cut(string(content), "\n")
		if got == "" || len(content) > 4096 || strings.Contains(got, "\n") || !strings.HasPrefix(first, prefix) || !strings.HasSuffix(strings.TrimRight(first, "\r"), got) {
			t.Fatalf("gitLink(%q, %q) = %q", content, prefix, got)
		}
	})
}
