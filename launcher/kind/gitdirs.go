package kind

import (
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/confine"
)

// GitDirs are the git directories outside a --cwd worktree that git needs
// to work there, as the child's view binds them. A linked worktree (git
// worktree add, as a fleet's host makes them) has a .git file naming its
// own directory, <common>/worktrees/<name>, and shares the repository's
// common directory: git writes the worktree's index and HEAD in the
// first, and objects, refs and their logs in the second when it commits.
type GitDirs struct {
	// GitDir is the worktree's own git directory, bound writable.
	GitDir string `json:"git_dir"`
	// Common is the repository's common directory, bound read-only (its
	// config and hooks above all: what the operator's own git runs and
	// obeys), with Writable bound writable inside it.
	Common string `json:"common"`
	// Writable are the directories of Common git writes to commit.
	Writable []string `json:"writable"`
}

// bindGit puts w's git directories into c: the worktree's git directory
// and what git writes to commit writable, the rest of the common directory
// read-only, and what the operator's git runs or obeys (w.GitSeal)
// read-only over the writable trees it lies in, so that nothing the child
// writes runs as the operator after the run.
func bindGit(c *confine.Spec, w *World) {
	if g := w.Git; g != nil {
		c.ReadOnly = append(c.ReadOnly, g.Common)
		c.Writable = append(c.Writable, g.Writable...)
		c.Writable = append(c.Writable, g.GitDir)
	}
	c.ReadOnly = append(c.ReadOnly, w.GitSeal...)
}

// gitWords say, for H7, what of git's directories the child may write.
func gitWords(g *GitDirs) string {
	return fmt.Sprintf("; git: the worktree's .git names %s, one of the worktrees of the repository %s, so the child's view binds it writable, and of the repository %s writable (git writes a commit's objects, refs and their logs there, so the child can move any branch of the repository) and the rest, its config and hooks among it, read-only",
		g.GitDir, g.Common, orNone(g.Writable))
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "nothing"
	}
	return strings.Join(l, ", ")
}

// claimGit adds w's git directories and seal to the H7 row of claim;
// nothing when there are none.
func claimGit(claim *attest.Claim, w *World) {
	if w.Git != nil {
		claim.Add(attest.H7, gitWords(w.Git))
	}
	if len(w.GitSeal) > 0 {
		claim.Add(attest.H7, "; what the operator's git runs or obeys is read-only in the child's view, and the run holds it to what it was at its start: "+strings.Join(w.GitSeal, ", "))
	}
	if len(w.GitUnsealable) > 0 {
		claim.Add(attest.H7, "; "+strings.Join(w.GitUnsealable, ", ")+" (a symbolic link in the tree the child writes, which no bind can hold, so the child could point it elsewhere; the run holds it to what it was at its start)")
	}
}
