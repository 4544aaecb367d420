package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// The --version probe's cache: what a vendor binary said its version was,
// kept under the binary's identity in the cache the Node tools use
// (${METAHARNESS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/metaharness}/versions,
// never the clone nor a scratch tree), so that a run whose binary has not
// changed does not start it a second time. A stale entry is never found
// (its identity is not the binary's), and one that cannot be read is a miss. An
// entry holds a path, the identity and a version number, nothing secret.
// The directory is 0700 and each entry 0600, written whole (a temporary file
// renamed into place), and an entry another user could have written is not
// believed: --strict-version rests on it.

// binaryID is a vendor binary's identity: the file its path names,
// followed through symbolic links. Any rewrite, replacement or touch of the
// file changes it: a new inode, size or mtime, and ctime, which no caller
// can set back.
type binaryID struct {
	Path    string `json:"path"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	CtimeNS int64  `json:"ctime_ns"`
}

func identify(path string) (binaryID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return binaryID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return binaryID{}, errors.New("no file identity on this system")
	}
	return binaryID{Path: path, Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		MtimeNS: st.Mtim.Nano(), CtimeNS: st.Ctim.Nano()}, nil
}

type versionEntry struct {
	binaryID
	Version string `json:"version"`
}

// versionCache is the cache directory; its zero value caches nothing.
type versionCache struct{ dir string }

// openVersionCache finds the caller's cache directory in env, the
// caller's environment; none when neither variable names an absolute one.
func openVersionCache(env map[string]string) versionCache {
	base := env["METAHARNESS_CACHE"]
	if !filepath.IsAbs(base) {
		switch xdg, home := env["XDG_CACHE_HOME"], env["HOME"]; {
		case filepath.IsAbs(xdg):
			base = filepath.Join(xdg, "metaharness")
		case filepath.IsAbs(home):
			base = filepath.Join(home, ".cache", "metaharness")
		default:
			return versionCache{}
		}
	}
	return versionCache{dir: filepath.Join(base, "versions")}
}

func (c versionCache) path(id binaryID) string {
	b, _ := json.Marshal(id)
	sum := sha256.Sum256(b)
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// lookup is the version cached for id, if an entry this user wrote holds
// exactly that identity.
func (c versionCache) lookup(id binaryID) (string, bool) {
	if c.dir == "" || !private(c.dir, true) {
		return "", false
	}
	p := c.path(id)
	if !private(p, false) {
		return "", false
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var e versionEntry
	if err := json.NewDecoder(io.LimitReader(f, 4<<10)).Decode(&e); err != nil || e.binaryID != id || e.Version == "" {
		return "", false
	}
	return e.Version, true
}

// store caches version for id. It writes nothing into a directory that is
// not this user's alone; a failure leaves the cache as it was.
func (c versionCache) store(id binaryID, version string) error {
	if c.dir == "" {
		return errors.New("no cache directory")
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	if !private(c.dir, true) {
		return errors.New(c.dir + " is not this user's alone")
	}
	b, err := json.Marshal(versionEntry{binaryID: id, Version: version})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, ".entry-*") // mode 0600
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(id))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// private: path (not a symbolic link) is a directory or a regular file as
// dir says, owned by this user, and no one else may read or write it.
func private(path string, dir bool) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.IsDir() != dir || (!dir && !fi.Mode().IsRegular()) || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
