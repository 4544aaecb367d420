package frame

import (
	"strings"
	"testing"
)

func TestScopeFirstMatchWins(t *testing.T) {
	s := SubjectScope{
		{Paths: "src/generated/**", Write: WriteDenied},
		{Paths: "src/**", Write: WritePartialOnly},
		{Paths: "*.md", Write: WriteAllowed},
		{Paths: "**", Write: WriteDenied},
	}
	cases := []struct {
		path  string
		class string
		rule  int
	}{
		{"src/generated/x.go", WriteDenied, 0},
		{"src/generated", WriteDenied, 0}, // ** matches no segment too
		{"src/a/b/c.go", WritePartialOnly, 1},
		{"./src//main.go", WritePartialOnly, 1},
		{"README.md", WriteAllowed, 2},
		{"docs/README.md", WriteDenied, 3}, // * stays within one segment
		{".env", WriteDenied, 3},
	}
	for _, c := range cases {
		class, rule, err := s.Class(c.path)
		if err != nil || class != c.class || rule != c.rule {
			t.Errorf("%s: got %s rule %d (%v), want %s rule %d", c.path, class, rule, err, c.class, c.rule)
		}
	}
}

func TestScopeUnmatchedIsAllowed(t *testing.T) {
	s := SubjectScope{{Paths: "secrets/*", Write: WriteDenied}}
	if class, rule, err := s.Class("src/a.go"); class != WriteAllowed || rule != -1 || err != nil {
		t.Fatalf("got %s %d %v", class, rule, err)
	}
	if class, _, _ := s.Class("secrets/deep/key"); class != WriteAllowed {
		t.Fatalf("secrets/* matched two segments: %s", class)
	}
}

func TestScopeRefusesPathsOutsideWhatItSpeaksFor(t *testing.T) {
	s := SubjectScope{{Paths: "src/**", Write: WriteAllowed}}
	for _, p := range []string{"/etc/passwd", "src/../secrets/key", ".."} {
		if _, _, err := s.Class(p); err == nil {
			t.Errorf("%s: accepted", p)
		}
	}
}

func TestGlobValidation(t *testing.T) {
	for _, g := range []string{"", "/abs/**", "a//b", "a/./b", "../x", "a**", "src/[", "x/"} {
		if _, err := compileGlob(g); err == nil {
			t.Errorf("%q compiled", g)
		}
	}
	for _, g := range []string{"**", "src/**/test_*.go", "a/?/[bc]"} {
		if _, err := compileGlob(g); err != nil {
			t.Errorf("%q: %v", g, err)
		}
	}
}

func TestGlobWithManyDoubleStarsStaysLinear(t *testing.T) {
	g, err := compileGlob(strings.Repeat("**/", 40) + "z")
	if err != nil {
		t.Fatal(err)
	}
	segs := strings.Split(strings.Repeat("a/", 200)+"b", "/")
	if g.match(segs) {
		t.Fatal("matched a path that does not end in z")
	}
}
