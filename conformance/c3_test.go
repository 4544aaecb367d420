package conformance

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateC3 = flag.Bool("update-c3", false, "rewrite each C3 vector's expect block from what the engine does now; review the diff before committing")

// TestC3Vectors plays every file under testdata/c3.
func TestC3Vectors(t *testing.T) {
	files, err := filepath.Glob("testdata/c3/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no C3 vectors: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			v, err := ParseC3Vector(name, b)
			if err != nil {
				t.Fatal(err)
			}
			if *updateC3 {
				got, err := v.Play()
				if err != nil {
					t.Fatal(err)
				}
				v.Expect = got
				if err := os.WriteFile(file, formatC3Vector(v), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := v.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
	embedded, err := C3Vectors()
	if err != nil {
		t.Fatal(err)
	}
	if len(embedded) != len(files) {
		t.Fatalf("%d vectors are built in, %d are in testdata/c3", len(embedded), len(files))
	}
}

// TestC3NamedVectorsExist holds the vector set to the ids the reference
// notes name (§13) and to the two the issue adds.
func TestC3NamedVectorsExist(t *testing.T) {
	vs, err := C3Vectors()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, v := range vs {
		have[v.ID] = true
	}
	for _, id := range []string{
		"c3/allow-lets-the-call-run",
		"c3/deny-carries-a-reason-the-model-is-told",
		"c3/replace-runs-the-call-with-a-different-input",
		"c3/an-unanswered-call-is-denied-by-metaharnesss-own-deadline",
		"c3/interrupt-is-a-legal-answer-and-the-deny-is-written-first",
		"c3/a-decision-for-an-unopened-call-is-unknown-call",
		"c3/a-second-decision-for-the-same-call-is-too-late",
		"c3/observe-allows-every-call-and-names-the-mode-that-did",
		"c3/several-pending-calls-are-answered-out-of-order",
		"c3/an-embedder-deny-is-written-before-a-following-interrupt",
	} {
		if !have[id] {
			t.Errorf("missing vector %s", id)
		}
	}
}

// TestC3CheckCatchesADifference makes sure a vector that expects something
// else fails: a runner that passes everything proves nothing.
func TestC3CheckCatchesADifference(t *testing.T) {
	vs, err := C3Vectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.ID != "c3/allow-lets-the-call-run" {
			continue
		}
		v.Expect.Child = []json.RawMessage{json.RawMessage(`{"call_id":"t1","decision":{"decision":"deny","reason":"x"}}`)}
		if err := v.Check(); err == nil || !strings.Contains(err.Error(), "lines to the child") {
			t.Fatalf("a wrong child line passed: %v", err)
		}
		return
	}
	t.Fatal("c3/allow-lets-the-call-run not found")
}

// formatC3Vector writes a vector one script step and one output line per
// line, so that a diff of an expect block reads event by event.
func formatC3Vector(v C3Vector) []byte {
	var b bytes.Buffer
	str := func(x any) string {
		var c bytes.Buffer
		if raw, ok := x.(json.RawMessage); ok {
			if err := json.Compact(&c, raw); err != nil {
				panic(err)
			}
			return c.String()
		}
		enc := json.NewEncoder(&c)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			panic(err)
		}
		return strings.TrimSuffix(c.String(), "\n")
	}
	list := func(indent string, items []string) {
		if len(items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, it := range items {
			b.WriteString(indent + "  " + it)
			if i < len(items)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	}
	raws := func(rs []json.RawMessage) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = str(r)
		}
		return out
	}
	b.WriteString("{\n  \"proves\": " + str(v.Proves) + ",\n  \"mode\": " + str(v.Mode) + ",\n")
	if v.VendorTimeoutMS != 0 {
		b.WriteString("  \"vendor_timeout_ms\": " + str(v.VendorTimeoutMS) + ",\n")
	}
	if len(v.Refuses) > 0 {
		b.WriteString("  \"refuses\": " + str(v.Refuses) + ",\n")
	}
	if v.Wire {
		b.WriteString("  \"wire\": true,\n")
	}
	if len(v.Frame) > 0 {
		b.WriteString("  \"frame\": " + str(v.Frame) + ",\n")
	}
	b.WriteString("  \"script\": ")
	list("  ", raws(v.Script))
	b.WriteString(",\n  \"expect\": {\n    \"events\": ")
	list("    ", raws(v.Expect.Events))
	b.WriteString(",\n    \"child\": ")
	list("    ", raws(v.Expect.Child))
	b.WriteString(",\n    \"stderr\": ")
	var errs []string
	for _, s := range v.Expect.Stderr {
		errs = append(errs, str(s))
	}
	list("    ", errs)
	b.WriteString("\n  }\n}\n")
	return b.Bytes()
}
