package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReclaimWhichTrees: a starting run reclaims a dead run's tree (its
// lock free) and one whose lock file is gone (its run removing it, or
// killed while removing it), without making anything in it, and leaves a
// live run's tree alone; the owner of the tree being removed then finishes
// its removal without an error.
func TestReclaimWhichTrees(t *testing.T) {
	dir := t.TempDir()
	removing, err := newScratch(dir)
	if err != nil {
		t.Fatal(err)
	}
	live, err := newScratch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	dead, err := newScratch(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = dead.lock.Close() // its run died
	if err := os.Remove(filepath.Join(removing.root, scratchLock)); err != nil {
		t.Fatal(err)
	}
	if got := reclaimScratch(dir); !slices.Contains(got, dead.root) || !slices.Contains(got, removing.root) || slices.Contains(got, live.root) {
		t.Errorf("reclaimed %v; want the dead run's %s and the half-removed %s, not the live run's %s", got, dead.root, removing.root, live.root)
	}
	if err := removing.remove(); err != nil {
		t.Errorf("the owner's removal failed after the reclaim: %v", err)
	}
	if _, err := os.Lstat(removing.root); !os.IsNotExist(err) {
		t.Errorf("the tree being removed is still there (%v)", err)
	}
}

// TestReclaimBesideRemoval: a run removing its tree while another starts
// and reclaims never sees its removal fail; the reclaim creating a lock
// file in the tree did that to about one removal in twenty-five.
func TestReclaimBesideRemoval(t *testing.T) {
	dir := t.TempDir()
	failed := 0
	const rounds = 500
	for range rounds {
		s, err := newScratch(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"home", "tmp", "work"} {
			if err := os.Mkdir(filepath.Join(s.root, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			reclaimScratch(dir)
		}()
		if err := s.remove(); err != nil {
			failed++
		}
		<-done
	}
	if failed > 0 {
		t.Errorf("%d of %d removals failed beside a reclaim", failed, rounds)
	}
}
