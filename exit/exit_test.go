package exit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	r := Refuse("catalogue-malformed", "entry %d has no name", 2)
	if got := Line(fmt.Errorf("loading: %w", r)); got != "metaharness: catalogue-malformed: entry 2 has no name" {
		t.Errorf("wrapped refusal: %q", got)
	}
	if got := Line(errors.New("disk full")); got != "metaharness: io: disk full" {
		t.Errorf("plain error: %q", got)
	}
	cause := errors.New("permission denied")
	w := Wrap("catalogue-unreadable", cause, "reading %s", "c.yaml")
	if !errors.Is(w, cause) || w.Message != "reading c.yaml: permission denied" {
		t.Errorf("Wrap lost its cause: %v", w)
	}
}

func TestWorstGapOutranksUnknown(t *testing.T) {
	for _, c := range []struct {
		in   []Code
		want Code
	}{
		{nil, OK}, {[]Code{OK, OK}, OK}, {[]Code{Unknown, OK}, Unknown},
		{[]Code{Unknown, Gap}, Gap}, {[]Code{Gap, Unknown}, Gap},
	} {
		if got := Worst(c.in...); got != c.want {
			t.Errorf("Worst(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestREADMEExitTable: README.md's exit table has one row per code, in
// order, each saying exactly what Meanings says.
func TestREADMEExitTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Exit codes\n")
	if !ok {
		t.Fatal("README.md has no '## Exit codes' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| (\d) \| (.+) \|$`)
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) != len(Meanings) {
		t.Fatalf("README's exit table has %d rows, the exit package %d codes", len(rows), len(Meanings))
	}
	for i, r := range rows {
		code, _ := strconv.Atoi(r[1])
		if code != i {
			t.Errorf("row %d is exit %d: the table goes 0 to %d in order", i, code, len(Meanings)-1)
		}
		if want := Meanings[Code(code)]; r[2] != want {
			t.Errorf("exit %d: README says\n  %s\nthe exit package says\n  %s", code, r[2], want)
		}
	}
}
