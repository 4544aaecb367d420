package conformance

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected plans of the C1 vectors")

// TestC1Vectors checks every launch vector under testdata/c1; adding a
// vector needs no code. -update rewrites their expectations.
func TestC1Vectors(t *testing.T) {
	files, _ := filepath.Glob("testdata/c1/*/*.json")
	if len(files) == 0 {
		t.Fatal("no C1 vectors")
	}
	for _, f := range files {
		v, err := LoadC1(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(v.ID, func(t *testing.T) {
			if *update {
				plan, refusal, err := PlanC1(v)
				if err != nil {
					t.Fatal(err)
				}
				v.Plan, v.Refusal = plan, refusal
				b, _ := json.MarshalIndent(v, "", "  ")
				if err := os.WriteFile(f, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := CheckC1(v); err != nil {
				t.Error(err)
			}
		})
	}
}
