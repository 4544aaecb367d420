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
		if err := RenderHTML(io.Discard, StreamOf("f", data)); err != nil {
			t.Fatalf("a readable stream does not render: %v", err)
		}
	})
}
