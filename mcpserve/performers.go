package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Bounds of the performers: every listing and read is bounded (SPEC §3.3).
const (
	defaultReadBytes  = 256 << 10
	maxReadBytes      = 4 << 20
	maxListEntries    = 10_000
	defaultResults    = 100
	maxResults        = 1_000
	maxSearchFiles    = 50_000
	maxSearchFileSize = 1 << 20
	maxMatchLine      = 500
)

// performer is one entry this build performs.
type performer struct {
	fields  []string // the fields it declares
	perform func(ctx context.Context, w *workspace, entry string, a Arguments) (string, *CallError)
}

var performers = map[string]performer{
	"fs.read":   {[]string{"path", "max_bytes"}, fsRead},
	"fs.list":   {[]string{"path"}, fsList},
	"fs.search": {[]string{"pattern", "path", "max_results"}, fsSearch},
	"fs.write":  {[]string{"path", "text"}, fsWrite},
	"fs.edit":   {[]string{"path", "old", "new"}, fsEdit},
}

// perform runs an entry's performer on checked arguments. A field with a
// value that the performer does not declare is refused by name and nothing
// is done (SPEC §7.3).
func perform(ctx context.Context, w *workspace, entry string, a Arguments) (string, *CallError) {
	p, ok := performers[entry]
	if !ok {
		return "", callErr(entry, "", "is not performed by this build (it performs %s)", strings.Join(Performed(), ", "))
	}
	for _, x := range a {
		if !contains(p.fields, x.Name) {
			return "", callErr(entry, x.Name, "is not a field the %s performer declares (%s); leave it out", entry, strings.Join(p.fields, ", "))
		}
	}
	return p.perform(ctx, w, entry, a)
}

// stringArg reads a string field; def when it is absent.
func stringArg(entry string, a Arguments, field, def string) (string, *CallError) {
	raw, ok := a.Get(field)
	if !ok {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", callErr(entry, field, "must be a string")
	}
	return s, nil
}

// intArg reads a positive integer field, at most limit; def when absent.
func intArg(entry string, a Arguments, field string, def, limit int) (int, *CallError) {
	raw, ok := a.Get(field)
	if !ok {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > limit {
		return 0, callErr(entry, field, "must be an integer from 1 to %d", limit)
	}
	return n, nil
}

func pathArg(entry string, a Arguments) (string, *CallError) {
	p, cerr := stringArg(entry, a, "path", "")
	if cerr != nil {
		return "", cerr
	}
	return rel(entry, "path", p)
}

func fsRead(_ context.Context, w *workspace, entry string, a Arguments) (string, *CallError) {
	p, cerr := pathArg(entry, a)
	if cerr != nil {
		return "", cerr
	}
	limit, cerr := intArg(entry, a, "max_bytes", defaultReadBytes, maxReadBytes)
	if cerr != nil {
		return "", cerr
	}
	f, st, cerr := w.openRegular(entry, "path", p)
	if cerr != nil {
		return "", cerr
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", fsError(entry, "path", p, err)
	}
	truncated := len(data) > limit
	if truncated {
		data = data[:limit]
		for len(data) > 0 && !utf8.Valid(data) && len(data) > limit-utf8.UTFMax {
			data = data[:len(data)-1] // do not split the last character
		}
	}
	if !utf8.Valid(data) {
		return "", callErr(entry, "path", "%q is not UTF-8 text", p)
	}
	if truncated {
		return string(data) + fmt.Sprintf("\n[fs.read: truncated at %d of %d bytes; ask for more with max_bytes]", len(data), st.Size()), nil
	}
	return string(data), nil
}

type listEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func fsList(_ context.Context, w *workspace, entry string, a Arguments) (string, *CallError) {
	p, cerr := pathArg(entry, a)
	if cerr != nil {
		return "", cerr
	}
	names, truncated, cerr := w.readDir(entry, p, maxListEntries)
	if cerr != nil {
		return "", cerr
	}
	out := struct {
		Path      string      `json:"path"`
		Entries   []listEntry `json:"entries"`
		Truncated bool        `json:"truncated"`
	}{Path: p, Entries: []listEntry{}, Truncated: truncated}
	for _, d := range names {
		out.Entries = append(out.Entries, listEntry{Name: d.Name(), Type: typeName(d.Type())})
	}
	return pretty(out), nil
}

// readDir lists a directory beneath the workspace, sorted by name, at most
// limit entries. The directory is opened without blocking and must be one.
func (w *workspace) readDir(entry, p string, limit int) ([]fs.DirEntry, bool, *CallError) {
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, false, fsError(entry, "path", p, err)
	}
	defer f.Close()
	list, err := f.ReadDir(limit + 1)
	if err != nil && err != io.EOF {
		return nil, false, fsError(entry, "path", p, err)
	}
	truncated := len(list) > limit
	if truncated {
		list = list[:limit]
	}
	slices.SortFunc(list, func(x, y fs.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })
	return list, truncated, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "other"
}

// skipDirs are directories fs.search never enters: version control and
// build or dependency trees.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, "node_modules": true, "target": true}

type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func fsSearch(ctx context.Context, w *workspace, entry string, a Arguments) (string, *CallError) {
	pattern, cerr := stringArg(entry, a, "pattern", "")
	if cerr != nil {
		return "", cerr
	}
	if pattern == "" {
		return "", callErr(entry, "pattern", "is empty; give the text to look for")
	}
	p, cerr := pathArg(entry, a)
	if cerr != nil {
		return "", cerr
	}
	limit, cerr := intArg(entry, a, "max_results", defaultResults, maxResults)
	if cerr != nil {
		return "", cerr
	}
	s := &searcher{w: w, entry: entry, pattern: pattern, limit: limit, out: []match{}}
	st, err := w.root.Stat(p)
	switch {
	case err != nil:
		return "", fsError(entry, "path", p, err)
	case st.IsDir():
		list, truncated, cerr := w.readDir(entry, p, maxListEntries)
		if cerr != nil {
			return "", cerr
		}
		s.truncated = truncated
		if err := s.dir(ctx, p, list); err != nil {
			return "", callErr(entry, "", "was cancelled (%v)", err)
		}
	default:
		s.file(p)
	}
	return pretty(struct {
		Pattern   string  `json:"pattern"`
		Matches   []match `json:"matches"`
		Truncated bool    `json:"truncated"`
	}{pattern, s.out, s.truncated}), nil
}

// searcher walks a tree beneath the workspace for a literal substring. It
// descends into directories only, never through a symbolic link, and is
// bounded in files visited and matches returned.
type searcher struct {
	w         *workspace
	entry     string
	pattern   string
	limit     int
	visited   int
	out       []match
	truncated bool
}

func (s *searcher) full() bool {
	if len(s.out) >= s.limit || s.visited >= maxSearchFiles {
		s.truncated = true
		return true
	}
	return false
}

// dir scans the listed entries of directory p. A subdirectory that cannot
// be listed (it vanished, or was swapped for something else) is skipped.
func (s *searcher) dir(ctx context.Context, p string, list []fs.DirEntry) error {
	for _, d := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.full() {
			return nil
		}
		child := path.Join(p, d.Name())
		switch {
		case d.IsDir() && !skipDirs[d.Name()]:
			sub, truncated, cerr := s.w.readDir(s.entry, child, maxListEntries)
			if cerr != nil {
				continue
			}
			s.truncated = s.truncated || truncated
			if err := s.dir(ctx, child, sub); err != nil {
				return err
			}
		case d.Type().IsRegular():
			s.file(child)
		}
	}
	return nil
}

// file scans one file. A file that vanished, grew past the size bound or
// is not UTF-8 text is skipped: a search reports matches, not the tree.
func (s *searcher) file(p string) {
	s.visited++
	f, st, cerr := s.w.openRegular(s.entry, "path", p)
	if cerr != nil {
		return
	}
	defer f.Close()
	if st.Size() > maxSearchFileSize {
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSearchFileSize+1))
	if err != nil || len(data) > maxSearchFileSize || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxSearchFileSize+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.Contains(line, s.pattern) {
			continue
		}
		if s.full() {
			return
		}
		if len(line) > maxMatchLine {
			line = strings.ToValidUTF8(line[:maxMatchLine], "") + "…"
		}
		s.out = append(s.out, match{Path: p, Line: n, Text: line})
	}
}

func fsWrite(_ context.Context, w *workspace, entry string, a Arguments) (string, *CallError) {
	p, cerr := pathArg(entry, a)
	if cerr != nil {
		return "", cerr
	}
	text, cerr := stringArg(entry, a, "text", "")
	if cerr != nil {
		return "", cerr
	}
	if cerr := w.replaceFile(entry, "path", p, []byte(text)); cerr != nil {
		return "", cerr
	}
	return pretty(map[string]any{"path": p, "bytes": len(text)}), nil
}

func fsEdit(_ context.Context, w *workspace, entry string, a Arguments) (string, *CallError) {
	p, cerr := pathArg(entry, a)
	if cerr != nil {
		return "", cerr
	}
	old, cerr := stringArg(entry, a, "old", "")
	if cerr != nil {
		return "", cerr
	}
	repl, cerr := stringArg(entry, a, "new", "")
	if cerr != nil {
		return "", cerr
	}
	if old == "" {
		return "", callErr(entry, "old", "is empty; give the text to replace, which must occur exactly once")
	}
	if !w.writable {
		return "", callErr(entry, "", "writes, and this workspace is read-only (start mcp-serve with --writable)")
	}
	if st, err := w.root.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return "", callErr(entry, "path", "%q is a symbolic link; edit the file it points to by its own path", p)
	}
	f, _, cerr := w.openRegular(entry, "path", p)
	if cerr != nil {
		return "", cerr
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	f.Close()
	if err != nil {
		return "", fsError(entry, "path", p, err)
	}
	if len(data) > maxReadBytes {
		return "", callErr(entry, "path", "%q is larger than %d bytes; fs.edit edits smaller files", p, maxReadBytes)
	}
	text := string(data)
	switch n := strings.Count(text, old); n {
	case 1:
	case 0:
		return "", callErr(entry, "old", "does not occur in %q; it must occur exactly once", p)
	default:
		return "", callErr(entry, "old", "occurs %d times in %q; it must occur exactly once (give more context)", n, p)
	}
	if cerr := w.replaceFile(entry, "path", p, []byte(strings.Replace(text, old, repl, 1))); cerr != nil {
		return "", cerr
	}
	return pretty(map[string]any{"path": p, "replaced": 1}), nil
}

// pretty renders a performer's answer: the JSON pretty-printed.
func pretty(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
