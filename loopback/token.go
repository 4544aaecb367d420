package loopback

import (
	"fmt"
	"os"
	"strings"
	"sync"

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
	switch {
	case src.Env != "" && src.File != "":
		return nil, exit.Refuse(RefuseTokenSourceAmbiguous, "both --token-env %s and --token-file %s were given; name one source of the token", src.Env, src.File)
	case src.Env == "" && src.File == "":
		return nil, exit.Refuse(RefuseTokenMissing, "no token source: name the environment variable (--token-env NAME) or the file (--token-file PATH) that holds the upstream's token")
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	t := &tokens{src: src, lookup: lookup}
	tok, err := t.read()
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
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", exit.Refuse(RefuseTokenMissing, "--token-file %s is empty; write the upstream's token into it", t.src.File)
	}
	if strings.ContainsAny(v, "\r\n") {
		return "", exit.Refuse(RefuseTokenUnreadable, "--token-file %s holds more than one line; it should hold the token only", t.src.File)
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
