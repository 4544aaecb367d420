package spelling

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"fs.read", "fs.read", 0},
		{"fs.raed", "fs.read", 2},
		{"fs.red", "fs.read", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (it is symmetric)", c.b, c.a, got, c.want)
		}
	}
}
