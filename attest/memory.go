package attest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Memory is how a kind's loader treats memory files, as the kind's
// descriptor declares it (launcher/<kind>).
type Memory struct {
	// Shapes lists every memory-file shape the pinned loader reads from a
	// directory, relative to it. A shape ending in "/*.md" is every .md file
	// directly in that directory.
	Shapes []string
	// KeptOut says how the launch keeps memory files above the cwd out of
	// the loader, for H11; "" when it cannot, so that one found there is a
	// gap.
	KeptOut string
	// AtRoot says what becomes of a memory file at the root of the cwd, for
	// ambient_inputs; "" is "read by the vendor".
	AtRoot string
}

// MemoryWalk is what the ancestor walk from a working directory found.
type MemoryWalk struct {
	// From is the directory the walk started at (absolute).
	From string
	// Above are memory files in the directories above From, nearest first.
	Above []string
	// AtRoot are memory files in From itself: the tree's own.
	AtRoot []string
}

// WalkMemory looks in dir and in every directory above it, up to the
// filesystem root, for the memory-file shapes a kind's loader reads. The
// vendor starts in the resolved directory (its getcwd), so when dir passes
// through a symbolic link both the spelled and the resolved ancestors are
// walked. An unreadable directory is one the vendor cannot read either, and
// is passed over.
func WalkMemory(shapes []string, dir string) (MemoryWalk, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return MemoryWalk{}, fmt.Errorf("memory walk from %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return MemoryWalk{}, fmt.Errorf("memory walk from %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return MemoryWalk{}, fmt.Errorf("memory walk from %s: not a directory", dir)
	}
	w := MemoryWalk{From: abs}
	starts := []string{abs}
	if r, err := filepath.EvalSymlinks(abs); err == nil && r != abs {
		starts = append(starts, r)
	}
	seen := map[string]bool{}
	for _, start := range starts {
		w.AtRoot = appendNew(w.AtRoot, seen, findShapes(start, shapes))
		for d := filepath.Dir(start); ; d = filepath.Dir(d) {
			w.Above = appendNew(w.Above, seen, findShapes(d, shapes))
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return w, nil
}

func appendNew(dst []string, seen map[string]bool, found []string) []string {
	for _, f := range found {
		if !seen[f] {
			seen[f] = true
			dst = append(dst, f)
		}
	}
	return dst
}

// findShapes lists the memory files of the given shapes in dir.
func findShapes(dir string, shapes []string) []string {
	var out []string
	for _, shape := range shapes {
		if sub, ok := strings.CutSuffix(shape, "/*.md"); ok {
			entries, err := os.ReadDir(filepath.Join(dir, sub))
			if err != nil {
				continue
			}
			for _, e := range entries {
				p := filepath.Join(dir, sub, e.Name())
				if strings.HasSuffix(e.Name(), ".md") && isFile(p) {
					out = append(out, p)
				}
			}
			continue
		}
		if p := filepath.Join(dir, shape); isFile(p) {
			out = append(out, p)
		}
	}
	return out
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Workdir is where the child runs, as the launch planned it.
type Workdir struct {
	// Kind names the kind in the rows; Memory is its loader's rules.
	Kind   string
	Memory Memory
	// Dir is the child's working directory.
	Dir string
	// Operator is --cwd: Dir is a tree the caller named, and the child may
	// write to it. False means metaharness made Dir in its scratch tree.
	Operator bool
	// ScratchCwd is --scratch-cwd: the caller declared Dir its own
	// disposable copy (only with Operator).
	ScratchCwd bool
	// Walk is WalkMemory(Memory.Shapes, Dir), taken before the spawn.
	Walk MemoryWalk
}

// AttestWorkdir claims H7 and H11, and the copy's own
// memory files into its ambient inputs (SPEC §5.2):
//
//   - a scratch cwd metaharness made: H7 imposed; H11 from the walk;
//   - --cwd: H7 and H11 unavailable, naming the directory, and H7 says in
//     words that the run could write to the operator's tree;
//   - --cwd --scratch-cwd: H7 declared (ok only when the record's cwd is
//     this directory); H11 from the walk.
//
// H11 from the walk: nothing above is imposed. A memory file above is named
// in the row; where the kind's launch keeps such files out (Memory.KeptOut)
// the row stays imposed on that ground, elsewhere the loader would read it,
// so the row is unavailable (a gap). A memory file at the root is the
// tree's own and goes into ambient_inputs, saying what becomes of it
// (Memory.AtRoot).
func AttestWorkdir(w Workdir, c *Claim) {
	dir := w.Dir
	switch {
	case w.Operator && !w.ScratchCwd:
		c.Unavailable(H7, fmt.Sprintf("--cwd %s: the child runs in the operator's tree with a write grant to it, so the run could write to the operator's tree; metaharness did not create it", dir))
		c.Unavailable(H11, fmt.Sprintf("--cwd %s: the child runs in the operator's tree, and memory files in it and above it are discoverable%s", dir, foundClause(w.Walk)))
		return
	case w.Operator:
		c.Declare(H7, fmt.Sprintf("--scratch-cwd: the caller declared %s its disposable copy; metaharness did not create it and passes no --add-dir", dir))
	default:
		c.Impose(H7, fmt.Sprintf("the child starts in %s, a directory metaharness made in its scratch tree", dir))
	}
	shapes := strings.Join(w.Memory.Shapes, ", ")
	switch {
	case len(w.Walk.Above) == 0:
		c.Impose(H11, fmt.Sprintf("the ancestor walk from %s found no memory file (%s) above it", dir, shapes))
	case w.Memory.KeptOut != "":
		c.Impose(H11, fmt.Sprintf("%s; the ancestor walk from %s reports above it: %s", w.Memory.KeptOut, dir, bounded(w.Walk.Above, ", ")))
	default:
		c.Unavailable(H11, fmt.Sprintf("the %s loader reads memory files above %s, and the ancestor walk found: %s", w.Kind, dir, bounded(w.Walk.Above, ", ")))
	}
	for _, f := range w.Walk.AtRoot {
		read := "read by the vendor"
		if w.Memory.AtRoot != "" {
			read = w.Memory.AtRoot
		}
		c.Ambient(fmt.Sprintf("memory file %s at the root of %s: the tree's own, %s", f, dir, read))
	}
}

func foundClause(w MemoryWalk) string {
	var found []string
	found = append(found, w.AtRoot...)
	found = append(found, w.Above...)
	if len(found) == 0 {
		return ""
	}
	return "; the walk found: " + bounded(found, ", ")
}
