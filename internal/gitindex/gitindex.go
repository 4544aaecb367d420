// Package gitindex reads git's index file (the staging area), enough to
// answer one question for --context: does the index of the repository
// holding a directory name this path? No git binary is run and nothing is
// fetched: the repository is found by walking up as git does (a .git
// directory, or a .git gitfile such as an embedder's scratch copy, a linked
// worktree or a submodule has), and the index file is parsed here.
//
// Format: git's Documentation/gitformat-index.txt (versions 2, 3 and 4, SHA-1
// or SHA-256 object names).
package gitindex

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/internal/inputfile"
)

// maxIndexBytes bounds how much of an index file is read; git's own
// largest indexes (millions of entries) stay well below it.
const maxIndexBytes = 1 << 30

// maxGitfileBytes bounds a .git gitfile, which holds one line.
const maxGitfileBytes = 64 << 10

// Entry is one index entry: a path relative to the repository root,
// its mode and its merge stage (0 for a normal entry, 1–3 during a conflict).
type Entry struct {
	Name  string
	Mode  uint32
	Stage int
}

// Index is a parsed index file.
type Index struct {
	Version int
	Hash    string // "sha1" or "sha256": the repository's object format
	Entries []Entry
}

// Has reports whether the index holds a stage-0 entry for name, a
// slash-separated path relative to the repository root.
func (ix *Index) Has(name string) bool {
	for _, e := range ix.Entries {
		if e.Stage == 0 && e.Name == name {
			return true
		}
	}
	return false
}

// hashes are the object formats git knows, tried in this order: the
// trailing checksum decides which one wrote the file.
var hashes = []struct {
	name string
	size int
	sum  func([]byte) []byte
}{
	{"sha1", sha1.Size, func(b []byte) []byte { s := sha1.Sum(b); return s[:] }},
	{"sha256", sha256.Size, func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }},
}

// Parse parses an index file and verifies its trailing checksum. A
// trailer of zeros is accepted unverified, as git does for index.skipHash.
func Parse(data []byte) (*Index, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errors.New("not a git index: it does not start with the DIRC signature")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d is not one of 2, 3, 4", version)
	}
	var parseErr error
	for _, h := range hashes {
		if len(data) < 12+h.size {
			continue
		}
		body, trailer := data[:len(data)-h.size], data[len(data)-h.size:]
		if !allZero(trailer) && !bytes.Equal(h.sum(body), trailer) {
			continue
		}
		ix, err := parseBody(body, int(version), h.size)
		if err == nil {
			ix.Hash = h.name
			return ix, nil
		}
		if parseErr == nil {
			parseErr = err
		}
	}
	if parseErr != nil {
		return nil, parseErr
	}
	return nil, errors.New("the index checksum does not match its content (neither SHA-1 nor SHA-256): the file is damaged")
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Entry layout offsets (from the start of an entry): ctime, mtime, dev, ino,
// mode, uid, gid and size are ten 32-bit fields; the object name and the
// 16-bit flags follow.
const (
	modeOffset   = 24
	statBytes    = 40
	flagExtended = 0x4000
	flagStage    = 0x3000
	flagNameLen  = 0x0fff
	// Extended flags (version 3 and later): skip-worktree and intent-to-add
	// are the only ones defined; any other bit means a format we do not know.
	extendedKnown = 0x6000
)

// parseBody parses the header, entries and extensions of an index
// whose trailing checksum (hashSize bytes) has been cut off already.
func parseBody(body []byte, version, hashSize int) (*Index, error) {
	count := binary.BigEndian.Uint32(body[8:12])
	fixed := statBytes + hashSize + 2
	p := 12
	ix := &Index{Version: version}
	ix.Entries = make([]Entry, 0, min(int(count), (len(body)-p)/fixed))
	prev := ""
	// A split index leaves names empty (they come from the shared index);
	// an empty name is only reported once the extensions say it is not one.
	emptyAt := 0
	for i := range count {
		start := p
		if len(body)-p < fixed {
			return nil, fmt.Errorf("entry %d of %d is cut off at byte %d", i+1, count, p)
		}
		mode := binary.BigEndian.Uint32(body[p+modeOffset:])
		flags := binary.BigEndian.Uint16(body[p+statBytes+hashSize:])
		p += fixed
		if flags&flagExtended != 0 {
			if version < 3 {
				return nil, fmt.Errorf("entry %d has extended flags, which version %d does not allow", i+1, version)
			}
			if len(body)-p < 2 {
				return nil, fmt.Errorf("entry %d is cut off in its extended flags", i+1)
			}
			if ext := binary.BigEndian.Uint16(body[p:]); ext&^extendedKnown != 0 {
				return nil, fmt.Errorf("entry %d has unknown extended flags %#04x", i+1, ext)
			}
			p += 2
		}
		var name string
		if version == 4 {
			strip, n := varint(body[p:])
			if n == 0 {
				return nil, fmt.Errorf("entry %d has a malformed path prefix length", i+1)
			}
			p += n
			if strip > uint64(len(prev)) {
				return nil, fmt.Errorf("entry %d strips %d bytes from a previous path of %d", i+1, strip, len(prev))
			}
			end := bytes.IndexByte(body[p:], 0)
			if end < 0 {
				return nil, fmt.Errorf("entry %d has no NUL after its path", i+1)
			}
			name = prev[:len(prev)-int(strip)] + string(body[p:p+end])
			p += end + 1
		} else {
			end := bytes.IndexByte(body[p:], 0)
			if end < 0 {
				return nil, fmt.Errorf("entry %d has no NUL after its path", i+1)
			}
			name = string(body[p : p+end])
			// Versions 2 and 3 pad each entry with 1–8 NULs to a multiple of 8.
			p = start + (p-start+end+8)&^7
			if p > len(body) {
				return nil, fmt.Errorf("entry %d is cut off in its padding", i+1)
			}
		}
		if n := int(flags & flagNameLen); n != flagNameLen && n != len(name) {
			return nil, fmt.Errorf("entry %d path is %d bytes but its flags say %d", i+1, len(name), n)
		}
		if name == "" && emptyAt == 0 {
			emptyAt = int(i) + 1
		}
		ix.Entries = append(ix.Entries, Entry{Name: name, Mode: mode, Stage: int(flags&flagStage) >> 12})
		prev = name
	}
	if err := checkExtensions(body[p:]); err != nil {
		return nil, err
	}
	if emptyAt > 0 {
		return nil, fmt.Errorf("entry %d has an empty path", emptyAt)
	}
	return ix, nil
}

// checkExtensions walks the extensions after the entries. An
// extension whose signature starts with A–Z is optional (a cache) and is
// skipped; a lowercase one changes what the entries mean and must be known.
// Only the sparse-index marker is: it turns some entries into directories,
// which never equal a file's path. A split index ("link") keeps most entries
// in another file, which this reader does not merge.
func checkExtensions(rest []byte) error {
	for len(rest) > 0 {
		if len(rest) < 8 {
			return fmt.Errorf("%d stray bytes after the index entries", len(rest))
		}
		sig := string(rest[:4])
		size := binary.BigEndian.Uint32(rest[4:8])
		if uint64(size) > uint64(len(rest)-8) {
			return fmt.Errorf("index extension %q claims %d bytes, %d remain", sig, size, len(rest)-8)
		}
		switch {
		case sig[0] >= 'A' && sig[0] <= 'Z', sig == "sdir":
		case sig == "link":
			return errors.New("the index is split (core.splitIndex), which this reader does not merge; run `git update-index --no-split-index` in the repository")
		default:
			return fmt.Errorf("the index needs extension %q, which this reader does not know", sig)
		}
		rest = rest[8+int(size):]
	}
	return nil
}

// varint decodes git's offset varint (varint.c): big-endian groups
// of seven bits, each continuation adding one so that encodings are unique.
// It returns the value and the bytes used, or 0 bytes when b is malformed or
// the value overflows.
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		val++
		if val == 0 || val>>(64-7) != 0 || i >= len(b) {
			return 0, 0
		}
		c = b[i]
		i++
		val = val<<7 | uint64(c&0x7f)
	}
	return val, i
}

// ParseGitfile reads a .git gitfile ("gitdir: <path>") and returns
// the path as written, the way git's read_gitfile does: trailing line breaks
// are dropped and nothing else is trimmed.
func ParseGitfile(data []byte) (string, error) {
	rest, ok := bytes.CutPrefix(data, []byte("gitdir: "))
	if !ok {
		return "", errors.New(`it does not start with "gitdir: "`)
	}
	rest = bytes.TrimRight(rest, "\r\n")
	if len(rest) == 0 {
		return "", errors.New("it names no directory after \"gitdir: \"")
	}
	if bytes.IndexByte(rest, 0) >= 0 {
		return "", errors.New("its directory contains a NUL byte")
	}
	return string(rest), nil
}

// Repo is the repository that holds a directory: its work-tree root
// and its git directory (for a linked worktree or submodule, the per-worktree
// directory the gitfile names, which holds that worktree's own index).
type Repo struct {
	Root   string
	GitDir string
}

// ErrNoRepo says that no directory from the start up to / holds a
// .git entry.
var ErrNoRepo = errors.New("no .git directory or gitfile in it or any directory above it")

// FindRepo walks up from dir (symbolic links in dir resolved, as
// git's getcwd sees it) to the first directory with a .git entry: a git
// directory (one with HEAD; git skips other directories named .git) or a
// gitfile, followed whether its target is relative or absolute.
func FindRepo(dir string) (Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, err
	}
	cur, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Repo{}, err
	}
	for {
		dotgit := filepath.Join(cur, ".git")
		fi, err := os.Stat(dotgit)
		switch {
		case err == nil && fi.IsDir():
			if _, err := os.Stat(filepath.Join(dotgit, "HEAD")); err == nil {
				return Repo{Root: cur, GitDir: dotgit}, nil
			}
		case err == nil && fi.Mode().IsRegular():
			gitdir, err := followGitfile(dotgit)
			if err != nil {
				return Repo{}, err
			}
			return Repo{Root: cur, GitDir: gitdir}, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return Repo{}, err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return Repo{}, ErrNoRepo
		}
		cur = parent
	}
}

// followGitfile reads the gitfile at path and returns the git
// directory it names, resolved against the gitfile's own directory.
func followGitfile(path string) (string, error) {
	data, err := inputfile.Read(path, maxGitfileBytes)
	if err != nil {
		return "", err
	}
	target, err := ParseGitfile(data)
	if err != nil {
		return "", fmt.Errorf("gitfile %s: %w", path, err)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", fmt.Errorf("gitfile %s names %s: %w", path, target, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("gitfile %s names %s, which is not a directory", path, target)
	}
	return target, nil
}

// Load reads and parses the index of repo. A repository with no
// index file yet (nothing ever added) has an empty index.
func Load(repo Repo) (*Index, error) {
	path := filepath.Join(repo.GitDir, "index")
	data, err := inputfile.Read(path, maxIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return &Index{}, nil
	}
	if err != nil {
		return nil, err
	}
	ix, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ix, nil
}

// PathOf turns a slash-separated path relative to dir into the path the
// index of repo would name it by.
func (repo Repo) PathOf(dir, rel string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	prefix, err := filepath.Rel(repo.Root, real)
	if err != nil {
		return "", err
	}
	if prefix == "." {
		return rel, nil
	}
	if prefix == ".." || strings.HasPrefix(prefix, "../") {
		return "", fmt.Errorf("%s is not inside the repository at %s", dir, repo.Root)
	}
	return filepath.ToSlash(prefix) + "/" + rel, nil
}
