package exit

import (
	"errors"
	"fmt"
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
