package kind

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
