package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/internal/treepath"
	"github.com/metaharness/metaharness/launcher/kind"
)

// Every live run of the user keeps what it holds in custody (its
// --token-file, its --sign-key, its records) from every child, not only
// its own: a registry in the runtime directory, one file in each run's
// scratch tree, written and read under one lock. A run covers in its
// child's view what every run registered before it keeps; and since a
// child already running cannot be given more to hide, a run checks that
// each earlier run's view hides what it keeps, and its attestation says
// which it does not (kind.World.CustodyExposed).

// custodyFile is a run's entry in its scratch tree; the registry's lock is
// a flock on the runtime directory itself, which leaves nothing behind.
const (
	custodyFile = "custody.json"
	maxCustody  = 1 << 20
)

// custody is one run's entry: what it keeps from every child, and what
// its own child's view hides (nil: the child is unconfined and reads
// whatever the user can).
type custody struct {
	Kept   []string `json:"kept"`
	Hidden []string `json:"hidden"`
}

// kept is what this run keeps from every child: the token file, the
// signing key, and every record it writes.
func (r *run) kept() []string {
	s := r.spec
	var out []string
	for _, p := range []string{s.TokenFile, s.SignKey, s.RecordsDir, s.Events, s.AttestationFile, s.Statement, s.RetainDir, s.SummaryFile, s.ArtifactsDir} {
		if p != "" {
			out = append(out, treepath.Real(p))
		}
	}
	return out
}

// observeCustody takes the registry's lock, held until registerCustody,
// and puts into w what the runs registered before this one keep (which
// this run's child's view covers) and what of this run's a child of one
// of them can read.
func (r *run) observeCustody(w *kind.World) error {
	lock, err := os.Open(r.tree.dir)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			_ = lock.Close()
		}
	}
	if err != nil {
		return exit.Wrap(RefuseScratchUnavailable, err, "the registry of live runs in %s cannot be locked; set %s to a writable directory of yours", r.tree.dir, envRuntimeDir)
	}
	r.custodyLock = lock
	entries, _ := os.ReadDir(r.tree.dir)
	mine := r.kept()
	for _, e := range entries {
		root := filepath.Join(r.tree.dir, e.Name())
		if !strings.HasPrefix(e.Name(), scratchPrefix) || root == r.tree.root {
			continue
		}
		b, err := inputfile.Read(filepath.Join(root, custodyFile), maxCustody)
		var c custody
		if err != nil || jsonscan.Unmarshal(b, &c) != nil {
			continue // no run, or one not yet registered (it registers under the lock)
		}
		w.OthersCustody = append(w.OthersCustody, c.Kept...)
		for _, p := range mine {
			if !hiddenBy(p, c.Hidden) && !slices.Contains(w.CustodyExposed, p) {
				w.CustodyExposed = append(w.CustodyExposed, p)
			}
		}
	}
	slices.Sort(w.OthersCustody)
	w.OthersCustody = slices.Compact(w.OthersCustody)
	return nil
}

// hiddenBy reports whether a view that hides hidden (directories, and
// covered paths or their patterns) keeps p out of reach; a nil view, an
// unconfined child's, hides nothing.
func hiddenBy(p string, hidden []string) bool {
	for _, h := range hidden {
		if treepath.Within(p, h) {
			return true
		}
		if ok, _ := filepath.Match(h, p); ok {
			return true
		}
	}
	return false
}

// registerCustody writes this run's entry, with what its child's view c
// hides, and releases the registry's lock: a run that starts from now on
// covers what this one keeps.
func (r *run) registerCustody(c *confine.Spec) error {
	defer r.releaseCustody()
	entry := custody{Kept: r.kept()}
	if c != nil {
		entry.Hidden = append(slices.Clone(c.Hidden), c.Covered...)
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	if err := newfile.Write(filepath.Join(r.tree.root, custodyFile), b, 0o600); err != nil {
		return exit.Wrap(kind.RefuseScratchWrite, err, "registering the run's custody in %s", r.tree.root)
	}
	return nil
}

// releaseCustody releases the registry's lock, once.
func (r *run) releaseCustody() {
	if r.custodyLock != nil {
		_ = r.custodyLock.Close()
		r.custodyLock = nil
	}
}
