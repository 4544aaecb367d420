package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestC2Replays replays every recorded transcript under testdata/c2/<kind>
// and compares the event stream byte for byte. -update rewrites them.
func TestC2Replays(t *testing.T) {
	files, _ := filepath.Glob("testdata/c2/*/*.in.jsonl")
	if len(files) == 0 {
		t.Fatal("no C2 vectors")
	}
	for _, f := range files {
		kind := filepath.Base(filepath.Dir(f))
		t.Run(strings.TrimSuffix(filepath.Base(f), ".in.jsonl"), func(t *testing.T) {
			if *update {
				in, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				out, err := ReplayC2(kind, in)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(strings.TrimSuffix(f, ".in.jsonl")+".expected.jsonl", out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := CheckC2(kind, f); err != nil {
				t.Error(err)
			}
		})
	}
}
