package loopback

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// maxTokenFile bounds a token file; a token is a few hundred bytes.
const maxTokenFile = 64 << 10

// maxRemembered bounds the tokens kept for redaction.
const maxRemembered = 8

// tokens holds the real token, read from its source at start and again
// after an upstream 401. It remembers every value it has read so that
// records and logs can be scrubbed of old ones too.
type tokens struct {
	src    TokenSource
	lookup func(string) (string, bool)

	mu   sync.Mutex
	cur  string
	seen []string
}

func newTokens(src TokenSource, lookup func(string) (string, bool)) (*tokens, error) {
	given := src.Given()
	switch {
	case len(given) > 1:
		return nil, exit.Refuse(RefuseTokenSourceAmbiguous, "%s were given; name one source of the token", strings.Join(given, " and "))
	case len(given) == 0:
		return nil, exit.Refuse(RefuseTokenMissing, "no token source: pass the token on an inherited descriptor (--token-fd N, the safest), or name the file (--token-file PATH) or the environment variable (--token-env NAME) that holds the upstream's token")
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	t := &tokens{src: src, lookup: lookup}
	var tok string
	var err error
	if src.FD != nil {
		tok, err = readFD(*src.FD)
	} else {
		tok, err = t.read()
	}
	if err != nil {
		return nil, err
	}
	t.cur = tok
	t.seen = []string{tok}
	return t, nil
}

// read reads the source once. Errors name the variable or the file, never
// a value.
func (t *tokens) read() (string, error) {
	if t.src.Env != "" {
		v, ok := t.lookup(t.src.Env)
		if v = strings.TrimSpace(v); !ok || v == "" {
			return "", exit.Refuse(RefuseTokenMissing, "--token-env %s: the environment variable is unset or empty; export the upstream's token in it", t.src.Env)
		}
		return v, nil
	}
	data, err := inputfile.Read(t.src.File, maxTokenFile)
	if err != nil {
		return "", exit.Within(RefuseTokenUnreadable, err, "--token-file %v; it should be a regular file that holds the token only", err)
	}
	if t.src.Decode != nil {
		tok, err := t.src.Decode(data)
		var r *exit.Refusal
		if errors.As(err, &r) {
			return "", &exit.Refusal{Name: r.Name, Message: "--token-file " + t.src.File + ": " + r.Message, Err: err}
		}
		if err != nil {
			return "", exit.Wrap(RefuseTokenUnreadable, err, "--token-file %s", t.src.File)
		}
		data = []byte(tok)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", exit.Refuse(RefuseTokenMissing, "--token-file %s is empty; write the upstream's token into it", t.src.File)
	}
	if strings.ContainsAny(v, "\r\n") {
		return "", exit.Refuse(RefuseTokenUnreadable, "--token-file %s holds more than one line; it should hold the token only", t.src.File)
	}
	return v, nil
}

// Given spells the sources src names as their flags (--token-env NAME,
// --token-file PATH, --token-fd N), in that order.
func (src TokenSource) Given() []string {
	var given []string
	if src.Env != "" {
		given = append(given, "--token-env "+src.Env)
	}
	if src.File != "" {
		given = append(given, "--token-file "+src.File)
	}
	if src.FD != nil {
		given = append(given, fmt.Sprintf("--token-fd %d", *src.FD))
	}
	return given
}

// fdWait bounds how long --token-fd waits for its token (a variable for
// tests).
var fdWait = 10 * time.Second

// readFD reads the token from an inherited descriptor, to its first newline
// or its end, and closes it.
func readFD(fd int) (string, error) {
	if fd < 3 {
		return "", exit.Refuse(RefuseTokenUnreadable, "--token-fd %d: descriptors 0, 1 and 2 are stdin, stdout and stderr; pass the token on descriptor 3 or above", fd)
	}
	// A pipe in non-blocking mode is pollable, so the read below can have a
	// deadline; a regular file reads at once anyway.
	_ = syscall.SetNonblock(fd, true)
	f := os.NewFile(uintptr(fd), fmt.Sprintf("token-fd-%d", fd))
	defer f.Close()
	if _, err := f.Stat(); err != nil {
		return "", exit.Wrap(RefuseTokenUnreadable, err, "--token-fd %d is not an open descriptor; pass it open to metaharness (for example `3<&0` in a shell)", fd)
	}
	_ = f.SetReadDeadline(time.Now().Add(fdWait))
	var data []byte
	buf := make([]byte, 4096)
	for !bytes.ContainsRune(data, '\n') && len(data) <= maxTokenFile {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return "", exit.Refuse(RefuseTokenUnreadable, "--token-fd %d: no token arrived within %s; write it, then a newline or the end of the stream", fd, fdWait)
		}
		if err != nil {
			return "", exit.Wrap(RefuseTokenUnreadable, err, "--token-fd %d cannot be read", fd)
		}
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if len(line) > maxTokenFile {
		return "", exit.Refuse(RefuseTokenUnreadable, "--token-fd %d carries more than %d bytes before its first newline; it should carry the token only", fd, maxTokenFile)
	}
	v := strings.TrimSpace(string(line))
	if v == "" {
		return "", exit.Refuse(RefuseTokenMissing, "--token-fd %d carried no token; write the upstream's token on it", fd)
	}
	return v, nil
}

func (t *tokens) current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// refresh re-reads the source after a 401 answered to a request sent with
// used. It reports the token to retry with, or "" when the source still
// holds used (or cannot be read), in which case the 401 stands.
func (t *tokens) refresh(used string) (string, error) {
	if t.src.File == "" {
		// A descriptor is read once and closed; an environment does not
		// change under a running process (and metaharness clears the
		// variable once read): nothing to re-read.
		return "", nil
	}
	fresh, err := t.read()
	if err != nil {
		return "", fmt.Errorf("re-reading the token after an upstream 401: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if fresh != t.cur {
		t.cur = fresh
		if len(t.seen) == maxRemembered {
			t.seen = t.seen[1:]
		}
		t.seen = append(t.seen, fresh)
	}
	if fresh == used {
		return "", nil
	}
	return fresh, nil
}

// remembered is every token value read so far (bounded).
func (t *tokens) remembered() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.seen...)
}
