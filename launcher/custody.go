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

// custody is one run's entry: what it keeps from every child, and its own
// child's view: what it hides (hidden and fresh directories), what it
// binds back into them, and what it covers even there. An unconfined
// child's view hides nothing.
type custody struct {
	Kept     []string `json:"kept"`
	Confined bool     `json:"confined"`
	Hidden   []string `json:"hidden,omitempty"`
	Bound    []string `json:"bound,omitempty"`
	Covered  []string `json:"covered,omitempty"`
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
			if !c.hides(p) && !slices.Contains(w.CustodyExposed, p) {
				w.CustodyExposed = append(w.CustodyExposed, p)
			}
		}
	}
	slices.Sort(w.OthersCustody)
	w.OthersCustody = slices.Compact(w.OthersCustody)
	return nil
}

// hides reports whether c's view keeps p out of its child's reach: p is
// covered (a path or pattern), or lies in a hidden or fresh directory and
// in nothing bound back there.
func (c custody) hides(p string) bool {
	if !c.Confined {
		return false
	}
	within := func(list []string) bool {
		return slices.ContainsFunc(list, func(d string) bool { return treepath.Within(p, d) })
	}
	for _, pattern := range c.Covered {
		if ok, _ := filepath.Match(pattern, p); ok || treepath.Within(p, pattern) {
			return true
		}
	}
	return within(c.Hidden) && !within(c.Bound)
}

// registerCustody writes this run's entry, with what its child's view c
// hides, and releases the registry's lock: a run that starts from now on
// covers what this one keeps.
func (r *run) registerCustody(c *confine.Spec) error {
	defer r.releaseCustody()
	entry := custody{Kept: r.kept(), Confined: c != nil}
	if c != nil {
		entry.Hidden = slices.Concat(c.Hidden, c.Fresh)
		entry.Bound = slices.Concat(c.ReadOnly, c.Writable, c.Seeded)
		entry.Covered = c.Covered
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
