// Package contextfile is --context FILE (SPEC §5.1): the files a run hands
// the model as reference data. Load opens each beneath the --cwd tree
// without following a symbolic link, checks that git's index names it, and
// reads it once; the same bytes are then digested, rendered (Render) and
// recorded (Records). Every refusal comes before anything is started and
// names the path. CheckArgSizes holds the finished launch to the kernel's
// limit on one argument, since the rendering travels on argv.
//
// It is a package of its own because it is a parser of outside input with
// its own refusals and fuzz targets, and none of it is the run: the
// launcher calls Load, Render and Records and knows nothing else of it.
package contextfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/gitindex"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/record"
)

const (
	// MaxFiles is the most --context files one run takes.
	MaxFiles = 16
	// MaxBytes bounds what the files add to the launch: the sum over
	// all files of the content's bytes plus the rendered path's bytes.
	//
	// The rendered path of a file is its path as it appears between the
	// quotes of path="…" in the rendering: the cleaned, slash-separated path
	// relative to --cwd (File.Path) after attribute escaping
	// (escapeAttr). For an ordinary path such as docs/a.md it is the
	// path itself.
	MaxBytes = 65536
)

// Refusal names of --context, and of a launch past the kernel's limit on
// one argument (CheckArgSizes). Each is exit 2 and names the path or the
// argument.
const (
	RefuseNeedsCWD           exit.Name = "context-needs-cwd"
	RefuseTooManyFiles       exit.Name = "context-too-many-files"
	RefusePathInvalid        exit.Name = "context-path-invalid"
	RefusePathEscapes        exit.Name = "context-path-escapes"
	RefuseSymlink            exit.Name = "context-symlink"
	RefuseNotRegularFile     exit.Name = "context-not-regular-file"
	RefuseNotUTF8            exit.Name = "context-not-utf8"
	RefuseNotInGitIndex      exit.Name = "context-not-in-git-index"
	RefuseGitIndexUnreadable exit.Name = "context-git-index-unreadable"
	RefuseTooLarge           exit.Name = "context-too-large"
	RefuseUnreadable         exit.Name = "context-unreadable"
	RefuseDuplicate          exit.Name = "context-duplicate"
	RefuseArgumentTooLong    exit.Name = "argument-too-long"
)

// File is one declared --context file as read: the bytes that were
// digested are the bytes that are handed over.
type File struct {
	// Path is the declared path cleaned (no "." or empty components),
	// slash-separated and relative to --cwd.
	Path string `json:"path"`
	// Text is the file's content, read once; valid UTF-8 with no NUL byte.
	Text string `json:"text"`
	// SHA256 is the lowercase hex SHA-256 of Text.
	SHA256 string `json:"sha256"`
}

// Bytes is the size of the content.
func (f File) Bytes() int { return len(f.Text) }

// Records lists files for session.started.context_files, each with
// the channel that carried it to the model (for example
// "append-system-prompt"). It returns nil for no files, so the key is absent.
func Records(files []File, channel string) []record.ContextFile {
	if len(files) == 0 {
		return nil
	}
	out := make([]record.ContextFile, len(files))
	for i, f := range files {
		out[i] = record.ContextFile{Path: f.Path, SHA256: f.SHA256, Bytes: uint64(len(f.Text)), Channel: channel}
	}
	return out
}

// Load reads the --context files named by paths (as declared,
// relative to cwd, in order) beneath cwd. It refuses, naming the path: no
// cwd; more than MaxFiles files; an empty, absolute or ".." path; a
// symbolic link anywhere on the path; anything but a regular file; a file
// the git index of the repository holding cwd does not name at stage 0;
// more than MaxBytes of content and rendered paths together; content
// that is not UTF-8 text; a file that cannot be read. No paths, no files.
func Load(cwd string, paths []string) ([]File, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if cwd == "" {
		return nil, exit.Refuse(RefuseNeedsCWD,
			"--context %s: context files are read beneath the --cwd tree and this run has no --cwd; add --cwd DIR naming the repository the files are in, or leave --context out",
			paths[0])
	}
	if len(paths) > MaxFiles {
		return nil, exit.Refuse(RefuseTooManyFiles,
			"%d --context files declared (%s … %s), more than %d; declare at most %d",
			len(paths), paths[0], paths[len(paths)-1], MaxFiles, MaxFiles)
	}
	rels := make([]string, len(paths))
	for i, p := range paths {
		rel, err := cleanPath(p)
		if err != nil {
			return nil, err
		}
		if j := slices.Index(rels[:i], rel); j >= 0 {
			return nil, exit.Refuse(RefuseDuplicate, "--context %s and --context %s name the same file, %s; declare each file once", paths[j], p, rel)
		}
		rels[i] = rel
	}
	dirfd, err := unix.Open(cwd, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, exit.Within(RefuseUnreadable, err,
			"--context %s: the --cwd directory %s cannot be opened (%v); name an existing directory with --cwd", paths[0], cwd, err)
	}
	defer unix.Close(dirfd)

	l := loader{cwd: cwd, dirfd: dirfd, budget: MaxBytes}
	files := make([]File, len(paths))
	for i := range paths {
		f, err := l.load(paths[i], rels[i])
		if err != nil {
			return nil, err
		}
		files[i] = f
	}
	return files, nil
}

// cleanPath checks a declared path's spelling and returns it cleaned.
// It refuses an empty path, one with a NUL byte or that is not UTF-8
// (context-path-invalid), an absolute path or one with a ".." component
// (context-path-escapes, even where the ".." would stay inside), and one
// ending in "/", which names a directory (context-not-regular-file).
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", exit.Refuse(RefusePathInvalid, "--context was given an empty path; name a file relative to --cwd")
	case strings.IndexByte(p, 0) >= 0:
		return "", exit.Refuse(RefusePathInvalid, "--context %q contains a NUL byte; name a file relative to --cwd", p)
	case !utf8.ValidString(p):
		return "", exit.Refuse(RefusePathInvalid, "--context %q is not UTF-8; name a file whose path is UTF-8, relative to --cwd", p)
	case strings.HasPrefix(p, "/"):
		return "", exit.Refuse(RefusePathEscapes, "--context %s is an absolute path; name the file relative to --cwd, without ..", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", exit.Refuse(RefusePathEscapes, "--context %s contains ..; name the file by its path beneath --cwd, without ..", p)
		}
	}
	if strings.HasSuffix(p, "/") {
		return "", exit.Refuse(RefuseNotRegularFile, "--context %s ends in /, which names a directory; name a regular file", p)
	}
	return path.Clean(p), nil
}

// checkText refuses content that is not UTF-8 text: invalid UTF-8,
// or a NUL byte, which no argument or C string can carry.
func checkText(declared string, text []byte) error {
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return exit.Refuse(RefuseNotUTF8,
				"--context %s is not UTF-8 text (invalid byte %#02x at offset %d); only UTF-8 text can be handed to the model, convert the file or leave it out",
				declared, text[i], i)
		case r == 0:
			return exit.Refuse(RefuseNotUTF8,
				"--context %s is not UTF-8 text (NUL byte at offset %d); only UTF-8 text without NUL can be handed to the model, leave the file out",
				declared, i)
		}
		i += n
	}
	return nil
}

// loader carries what the files of one declaration share: the open
// --cwd, the git index (read at the first file), and the byte budget left.
type loader struct {
	cwd    string
	dirfd  int
	budget int
	repo   gitindex.Repo
	index  *gitindex.Index
}

// load opens, checks and reads one file.
func (l *loader) load(declared, rel string) (File, error) {
	fd, err := openBeneath(l.dirfd, rel)
	switch {
	case errors.Is(err, errSymlink):
		return File{}, exit.Refuse(RefuseSymlink,
			"--context %s is or passes through a symbolic link beneath --cwd %s; links are never followed, name the file by its real path beneath --cwd",
			declared, l.cwd)
	case errors.Is(err, errEscapes):
		return File{}, exit.Refuse(RefusePathEscapes,
			"--context %s resolves outside --cwd %s; name a file beneath --cwd", declared, l.cwd)
	case err != nil:
		return File{}, exit.Within(RefuseUnreadable, err,
			"--context %s cannot be opened beneath --cwd %s (%v); name a readable file that exists there", declared, l.cwd, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return File{}, exit.Within(RefuseUnreadable, err, "--context %s cannot be examined (%v); name a readable regular file", declared, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, exit.Refuse(RefuseNotRegularFile,
			"--context %s is %s, not a regular file; name a regular file", declared, inputfile.Kind(fi.Mode()))
	}
	if err := l.checkIndexed(declared, rel); err != nil {
		return File{}, err
	}
	pathBytes := len(escapeAttr(rel))
	room := l.budget - pathBytes
	if room < 0 || fi.Size() > int64(room) {
		return File{}, l.tooLarge(declared, fi.Size(), pathBytes)
	}
	text, err := inputfile.ReadFrom(f, declared, int64(room))
	switch {
	case errors.Is(err, inputfile.ErrTooLarge): // it grew while it was read
		return File{}, l.tooLarge(declared, int64(room)+1, pathBytes)
	case err != nil:
		return File{}, exit.Within(RefuseUnreadable, err, "--context %v; name a readable regular file", err)
	}
	if err := checkText(declared, text); err != nil {
		return File{}, err
	}
	l.budget -= pathBytes + len(text)
	sum := sha256.Sum256(text)
	return File{Path: rel, Text: string(text), SHA256: hex.EncodeToString(sum[:])}, nil
}

func (l *loader) tooLarge(declared string, size int64, pathBytes int) error {
	return exit.Refuse(RefuseTooLarge,
		"--context %s (at least %d bytes of content and %d of rendered path) brings the declared files past %d bytes of content and rendered path together (%d used by the files before it); declare fewer or smaller files",
		declared, size, pathBytes, MaxBytes, MaxBytes-l.budget)
}

// checkIndexed refuses a file that the index of the repository holding
// --cwd does not name at stage 0. The index is read once, at the first file.
func (l *loader) checkIndexed(declared, rel string) error {
	if l.index == nil {
		repo, err := gitindex.FindRepo(l.cwd)
		if errors.Is(err, gitindex.ErrNoRepo) {
			return exit.Refuse(RefuseNotInGitIndex,
				"--context %s: --cwd %s is not in a git repository (%v); context files must be named by git's index, run the session in a repository and git add the file",
				declared, l.cwd, err)
		}
		if err != nil {
			return exit.Within(RefuseGitIndexUnreadable, err,
				"--context %s: the git repository that holds --cwd %s cannot be found (%v); repair its .git gitfile or directory", declared, l.cwd, err)
		}
		ix, err := gitindex.Load(repo)
		if err != nil {
			return exit.Within(RefuseGitIndexUnreadable, err,
				"--context %s: git's index of the repository at %s cannot be read (%v); repair it and run again", declared, repo.Root, err)
		}
		l.repo, l.index = repo, ix
	}
	name, err := l.repo.PathOf(l.cwd, rel)
	if err != nil {
		return exit.Within(RefuseGitIndexUnreadable, err, "--context %s cannot be placed in the repository at %s (%v); run from inside the repository", declared, l.repo.Root, err)
	}
	if !l.index.Has(name) {
		return exit.Refuse(RefuseNotInGitIndex,
			"--context %s (%s in the repository at %s) is not named in git's index; only files git tracks can be handed over, git add it or leave it out",
			declared, name, l.repo.Root)
	}
	return nil
}
