package launcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// A host's cache: answers that cost a child process to find, kept in the
// cache the Node tools use (${METAHARNESS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/metaharness},
// never the clone nor a scratch tree), each under everything that decides
// it, so that a run need not find them again: what a vendor binary said its
// version was (under the binary's identity, checkVersion) and that this host
// can confine a child, with the controls it found (under the host's and this
// binary's, confinable). An
// entry whose key is not the one asked for is never found, and one that
// cannot be read is a miss. An entry holds its key and a short answer,
// nothing secret. A directory is 0700 and each entry 0600, written whole (a
// temporary file renamed into place), and an entry another user could have
// written is not believed: --strict-version and the confinement's gap rows
// rest on it.

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
	// The file itself, not the link a caller reached it by: the same
	// binary linked from two HOMEs is one binary.
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return binaryID{}, err
	}
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

// cacheEntry is one answer and the key it answers.
type cacheEntry struct {
	Key   json.RawMessage `json:"key"`
	Value string          `json:"value"`
}

// hostCache is one directory of the cache; its zero value caches nothing.
type hostCache struct{ dir string }

// openCache finds the directory name of the caller's cache in env, the
// caller's environment; none when neither variable names an absolute one.
func openCache(env map[string]string, name string) hostCache {
	base := cacheBase(env)
	if base == "" {
		return hostCache{}
	}
	return hostCache{dir: filepath.Join(base, name)}
}

// cacheBase is the per-user cache, "" when the environment names none.
func cacheBase(env map[string]string) string {
	if base := env["METAHARNESS_CACHE"]; filepath.IsAbs(base) {
		return base
	}
	switch xdg, home := env["XDG_CACHE_HOME"], env["HOME"]; {
	case filepath.IsAbs(xdg):
		return filepath.Join(xdg, "metaharness")
	case filepath.IsAbs(home):
		return filepath.Join(home, ".cache", "metaharness")
	}
	return ""
}

func (c hostCache) path(key any) string {
	b, _ := json.Marshal(key)
	sum := sha256.Sum256(b)
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// lookup is the answer cached under key, if an entry this user wrote holds
// exactly that key.
func (c hostCache) lookup(key any) (string, bool) {
	k, err := json.Marshal(key)
	if err != nil || c.dir == "" || !private(c.dir, true) {
		return "", false
	}
	p := c.path(key)
	if !private(p, false) {
		return "", false
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var e cacheEntry
	if err := json.NewDecoder(io.LimitReader(f, 4<<10)).Decode(&e); err != nil || !bytes.Equal(e.Key, k) || e.Value == "" {
		return "", false
	}
	return e.Value, true
}

// store caches value under key. It writes nothing into a directory that is
// not this user's alone; a failure leaves the cache as it was.
func (c hostCache) store(key any, value string) error {
	if c.dir == "" {
		return errors.New("no cache directory")
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	if !private(c.dir, true) {
		return errors.New(c.dir + " is not this user's alone")
	}
	k, err := json.Marshal(key)
	if err != nil {
		return err
	}
	b, err := json.Marshal(cacheEntry{Key: k, Value: value})
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
		err = os.Rename(f.Name(), c.path(key))
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
