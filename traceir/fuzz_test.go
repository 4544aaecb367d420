package traceir

import (
	"encoding/json"
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
		s, err := ReadStream("f", data)
		if err != nil {
			return
		}
		d, err := Project(s, Source{Format: record.EventFormat, Bytes: data})
		if err != nil {
			return
		}
		out, err := d.Encode()
		if err != nil || !json.Valid(out) {
			t.Fatalf("a projection is not valid JSON: %v\n%s", err, out)
		}
		if _, err := RenderHTML(s); err != nil {
			t.Fatalf("a readable stream does not render: %v", err)
		}
	})
}
