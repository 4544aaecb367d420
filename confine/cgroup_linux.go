package confine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupControllers are what the child's cgroup bounds: memory.max and
// pids.max.
var cgroupControllers = []string{"memory", "pids"}

// DelegatedCgroup finds the cgroup v2 directory below which metaharness may
// make a child's cgroup: its own, when that is on a cgroup2 hierarchy
// mounted writable here, this user may write it, and its subtree has the
// memory and pids controllers enabled (cgroup.subtree_control: whoever
// manages the cgroup delegated them, such as systemd's Delegate=yes).
// Otherwise it returns "" and why, in words an operator can act on.
// metaharness never enables controllers nor moves a process itself: that
// is the delegating manager's to decide.
func DelegatedCgroup() (string, string) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "cannot read /proc/self/cgroup: " + err.Error()
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "cannot read /proc/self/mountinfo: " + err.Error()
	}
	return delegation(self, mounts)
}

// delegation is DelegatedCgroup on the given /proc/self/cgroup and
// /proc/self/mountinfo texts, the directories they name being real ones.
func delegation(self, mounts []byte) (string, string) {
	var unified string
	var v1 []string
	for _, l := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			unified = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if slices.Contains(cgroupControllers, c) {
				v1 = append(v1, c)
			}
		}
	}
	mount, root, ro := cgroup2Mount(mounts)
	switch {
	case unified == "" || mount == "":
		why := "no cgroup v2 hierarchy is mounted here"
		if len(v1) > 0 {
			why += " (the " + strings.Join(v1, " and ") + " controllers are on cgroup v1)"
		}
		return "", why + "; the bounds need cgroup v2 with a delegated cgroup"
	case len(v1) > 0:
		return "", "the " + strings.Join(v1, " and ") + " controllers are bound to cgroup v1 here (a hybrid hierarchy), so cgroup v2 cannot bound them"
	}
	rel := unified
	if root != "/" {
		r, ok := strings.CutPrefix(unified, root)
		if !ok || (r != "" && r[0] != '/') {
			return "", "metaharness's cgroup " + unified + " is outside the cgroup2 mount at " + mount
		}
		rel = r
	}
	dir := filepath.Join(mount, rel)
	if ro {
		return "", "the cgroup2 hierarchy is mounted read-only at " + mount
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return "", "metaharness's cgroup " + dir + " cannot be read: " + err.Error()
	}
	enabled := strings.Fields(string(b))
	var missing []string
	for _, c := range cgroupControllers {
		if !slices.Contains(enabled, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Sprintf("%s does not delegate the %s controller(s) to its subtree (its cgroup.subtree_control has %q); a cgroup manager enables them for a delegated cgroup (systemd: Delegate=yes, or run under systemd-run --user --scope -p Delegate=yes)",
			dir, strings.Join(missing, " and "), strings.TrimSpace(string(b)))
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return "", "metaharness's cgroup " + dir + " is not writable by this user: " + err.Error()
	}
	return dir, ""
}

// cgroup2Mount finds the cgroup2 mount in a mountinfo text: where it is
// mounted, the hierarchy path at its root, and whether it is read-only.
func cgroup2Mount(mountinfo []byte) (mount, root string, ro bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 6 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		return unescapeMount(f[4]), unescapeMount(f[3]), slices.Contains(strings.Split(f[5], ","), "ro")
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// makeCgroup makes the child's cgroup below c.Parent with c's bounds and
// returns it and a descriptor for it, which a clone lands in
// (SysProcAttr.UseCgroupFD).
func makeCgroup(c *Cgroup) (string, int, error) {
	dir, err := os.MkdirTemp(c.Parent, "metaharness-")
	if err != nil {
		return "", -1, fmt.Errorf("making the child's cgroup below %s: %w", c.Parent, err)
	}
	limits := []struct{ file, value string }{
		{"memory.max", strconv.FormatInt(c.MemoryMax, 10)},
		{"pids.max", strconv.Itoa(c.PidsMax)},
		{"memory.swap.max", "0"},
	}
	for _, l := range limits {
		p := filepath.Join(dir, l.file)
		if l.file == "memory.swap.max" {
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				continue // no swap accounting: nothing to stretch the bound
			}
		}
		if err := os.WriteFile(p, []byte(l.value), 0); err != nil {
			removeCgroup(dir)
			return "", -1, fmt.Errorf("bounding the child's cgroup (%s = %s): %w", p, l.value, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		removeCgroup(dir)
		return "", -1, fmt.Errorf("opening the child's cgroup %s: %w", dir, err)
	}
	return dir, fd, nil
}

// removeCgroup kills whatever is left in dir and removes it. A cgroup
// cannot be removed while a process in it is still exiting, so it waits a
// moment for that.
func removeCgroup(dir string) {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := unix.Rmdir(dir)
		if err != unix.EBUSY || time.Now().After(deadline) {
			return
		}
	}
}
