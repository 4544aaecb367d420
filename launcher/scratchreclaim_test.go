package launcher

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReclaimSparesATreeBeingRemoved: a run removing its own tree unlinks
// the lock file while it still holds the lock, the mark perhaps still
// there; a run starting at that moment must not take the tree for a dead
// one (by creating a lock file of its own, which nobody holds) and remove
// it under its owner. Only a tree whose own lock nobody holds is reclaimed.
func TestReclaimSparesATreeBeingRemoved(t *testing.T) {
	dir := t.TempDir()
	live, err := newScratch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	if err := os.Remove(filepath.Join(live.root, scratchLock)); err != nil {
		t.Fatal(err)
	}
	if got := reclaimScratch(dir); len(got) != 0 {
		t.Errorf("reclaimed %v, a tree whose run still holds its lock", got)
	}
	if _, err := os.Lstat(filepath.Join(live.root, scratchLock)); !os.IsNotExist(err) {
		t.Errorf("the reclaim made a lock file in a tree being removed (%v)", err)
	}

	dead, err := newScratch(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = dead.lock.Close() // its run died
	if got := reclaimScratch(dir); len(got) != 1 || got[0] != dead.root {
		t.Errorf("reclaimed %v, want the dead run's %s", got, dead.root)
	}
}
