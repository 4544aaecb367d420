package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/frame"
)

// TestSeal: a draft with no digest, and one whose content was changed
// after it was sealed, each come out sealed over their content as written,
// and load as a run loads them; the digest is on stderr.
func TestSeal(t *testing.T) {
	for _, name := range []string{"invalid-no-digest.json", "digest-mismatch-an-operation-added.json"} {
		draft := filepath.Join("..", "testdata", "frames", name)
		var out, errb bytes.Buffer
		if err := seal([]string{draft}, nil, &out, &errb); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, err := frame.Parse(out.Bytes())
		if err != nil {
			t.Fatalf("%s: the sealed output does not load: %v\n%s", name, err, out.String())
		}
		if errb.String() != "seal: digest "+f.Digest()+"\n" {
			t.Errorf("%s: stderr %q, want the digest %s", name, errb.String(), f.Digest())
		}
		if _, err := frame.Parse(must(os.ReadFile(draft))); err == nil {
			t.Errorf("%s: the draft loaded unsealed; the test proves nothing", name)
		}
	}
}

// TestSealFromStdin: with - (or nothing) the draft is read from stdin.
func TestSealFromStdin(t *testing.T) {
	draft := must(os.ReadFile(filepath.Join("..", "testdata", "frames", "invalid-no-digest.json")))
	for _, args := range [][]string{nil, {"-"}} {
		var out bytes.Buffer
		if err := seal(args, bytes.NewReader(draft), &out, &bytes.Buffer{}); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if _, err := frame.Parse(out.Bytes()); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestSealRefuses: a draft that breaks any other rule is not sealed, and
// the error says which rule; so are a missing draft and a second argument.
func TestSealRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join("..", "testdata", "frames", "invalid-an-unknown-key.json")}, "the draft cannot be sealed: frame has an invalid shape"},
		{[]string{filepath.Join("..", "testdata", "frames", "unknown-format-a-newer-tag.json")}, "the draft cannot be sealed: not a metaharness.frame/1 document"},
		{[]string{filepath.Join(t.TempDir(), "absent.json")}, "reading the draft: "},
		{[]string{"a.json", "b.json"}, "usage: go run ./frame/seal"},
	} {
		var out bytes.Buffer
		err := seal(c.args, nil, &out, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) || out.Len() > 0 {
			t.Errorf("seal %q: %v, %d bytes out; want %q and nothing written", c.args, err, out.Len(), c.want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
