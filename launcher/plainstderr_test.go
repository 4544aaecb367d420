package launcher

import (
	"bytes"
	"testing"
)

// TestPlainWriter: codex's coloured log line reaches stderr as text, also
// when its sequences are split across writes.
func TestPlainWriter(t *testing.T) {
	in := "\x1b[2m2026-12-03T18:19:52Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b]8;;https://x\x07link\x1b]8;;\x1b\\ \x1b(Bcodex: no bubblewrap\n"
	want := "2026-12-03T18:19:52Z ERROR link codex: no bubblewrap\n"
	for size := 1; size <= len(in); size++ {
		var out bytes.Buffer
		p := &plainWriter{w: &out}
		for i := 0; i < len(in); i += size {
			if n, err := p.Write([]byte(in[i:min(i+size, len(in))])); err != nil || n != min(size, len(in)-i) {
				t.Fatalf("write: %d, %v", n, err)
			}
		}
		if out.String() != want {
			t.Fatalf("writes of %d bytes: %q, want %q", size, out.String(), want)
		}
	}
}

// FuzzPlainWriter: whatever a vendor writes, no ESC gets through, and what
// does is the input's own bytes, in order.
func FuzzPlainWriter(f *testing.F) {
	f.Add([]byte("\x1b[31mERROR\x1b[0m x\n"), 3)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		var out bytes.Buffer
		p := &plainWriter{w: &out}
		cut := 0
		if len(in) > 0 {
			cut = (split%len(in) + len(in)) % len(in)
		}
		_, _ = p.Write(in[:cut])
		_, _ = p.Write(in[cut:])
		if bytes.IndexByte(out.Bytes(), 0x1b) >= 0 {
			t.Fatalf("an ESC got through: %q", out.Bytes())
		}
		rest := in
		for _, c := range out.Bytes() {
			i := bytes.IndexByte(rest, c)
			if i < 0 {
				t.Fatalf("%q is not a subsequence of %q", out.Bytes(), in)
			}
			rest = rest[i+1:]
		}
	})
}
