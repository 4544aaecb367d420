package traceir

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/metaharness/metaharness/record"
)

// FuzzProject: any bytes are refused or projected; a projection is valid
// JSON and renders as a page.
func FuzzProject(f *testing.F) {
	files, _ := filepath.Glob("testdata/streams/*.jsonl")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		if err := Project(&out, StreamOf("f", data), Source{Format: record.EventFormat}); err != nil {
			if out.Len() > 0 {
				t.Fatalf("a refused projection wrote %q", out.Bytes())
			}
			return
		}
		if !json.Valid(out.Bytes()) {
			t.Fatalf("a projection is not valid JSON:\n%s", out.Bytes())
		}
		if err := RenderHTML(io.Discard, Run{Stream: StreamOf("f", data)}); err != nil {
			t.Fatalf("a readable stream does not render: %v", err)
		}
	})
}

// FuzzIndentCompact: whatever JSON an encoder writes compact, indentCompact
// indents as json.Indent does.
func FuzzIndentCompact(f *testing.F) {
	files, _ := filepath.Glob("testdata/streams/*.jsonl")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range []string{`{}`, `[]`, `[[],{}]`, `{"a":[1,{"b":"\"}\\"}]}`, `"x"`, `"\u00e9\\"`, `{"a":{"b":{"c":[]}},"d":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "      ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentCompact(nil, compact.Bytes(), "      "); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indentCompact(%s) =\n%s\nwant\n%s", compact.Bytes(), got, want.Bytes())
		}
	})
}

// FuzzPageAttestation: any bytes are refused as an attestation document or
// read, and a document that is read renders beside its stream.
func FuzzPageAttestation(f *testing.F) {
	docs, _ := filepath.Glob("testdata/streams/*.attestation.json")
	more, _ := filepath.Glob("../attest/testdata/golden/*/document.json")
	for _, p := range append(docs, more...) {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"format":"metaharness.attestation/1","run":"r","loopback":{"counters":{},"requests":[{"seq":1,"start":"0001-01-01T00:00:00Z","duration_ns":-5,"throttled":[{"status":429}]}]},"exit_code":-7,"control_verdict":"x"}`))
	stream, err := os.ReadFile("testdata/streams/forged-request-throttled.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ReadAttestation("f", data)
		if err != nil {
			return
		}
		if err := RenderHTML(io.Discard, Run{Stream: StreamOf("s", stream), Attestation: doc, AttestationName: "f"}); err != nil {
			t.Fatalf("a readable attestation does not render: %v", err)
		}
	})
}
