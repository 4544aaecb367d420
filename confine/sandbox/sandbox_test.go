package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// TestParse: Parse takes exactly what Args writes, followed by the shell's
// arguments, and gives back the same shell and rules; anything else is
// not the sandbox's, and internal/earlysandbox leaves it to main.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		rules Rules
		rest  []string
	}{
		{Rules{}, []string{"-c", "ls"}},
		{Rules{}, []string{"-lc", "ls"}},
		{Rules{Unset: []string{"ANTHROPIC_BASE_URL", "X_1"}, Connect: []uint16{8080, 1}}, []string{"-c", "ls"}},
		{Rules{Connect: []uint16{}}, []string{"-c", "ls"}},
	} {
		args := append(Args("/bin/bash", c.rules), c.rest...)
		shell, r, rest, ok := Parse(args)
		if !ok || shell != "/bin/bash" || !slices.Equal(r.Unset, c.rules.Unset) || !slices.Equal(r.Connect, c.rules.Connect) ||
			(r.Connect == nil) != (c.rules.Connect == nil) || !slices.Equal(rest, c.rest) {
			t.Errorf("Parse(%q) = %q, %+v, %q, %t", args, shell, r, rest, ok)
		}
	}
	for _, args := range [][]string{
		nil,
		{"run", "claude"},
		Args("/bin/bash", Rules{}),
		append(Args("bash", Rules{}), "-c", "ls"),
		{"internal-sandbox", "--shell", "/bin/bash", "--unset", "1X", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--unset", "A=B", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--connect", "0", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--connect", "65536", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--connect", "080", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--connect", "80,", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--connect", "80", "--unset", "A", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "--connect", "80", "--connect", "81", "--", "-c", "ls"},
		{"internal-sandbox", "--shell", "/bin/bash", "-c", "ls"},
		{"internal-sandbox", "/bin/bash", "--", "-c", "ls"},
	} {
		if _, _, _, ok := Parse(args); ok {
			t.Errorf("Parse(%q) takes it; it is not the sandbox's", args)
		}
	}
}

// TestWithoutVars: the vendor's own variables are taken out, the rest kept
// in order, a value naming one untouched.
func TestWithoutVars(t *testing.T) {
	env := []string{"PATH=/bin", "ANTHROPIC_BASE_URL=http://127.0.0.1:1", "X=ANTHROPIC_BASE_URL", "TOKEN=a=b", "EMPTY"}
	got := withoutVars(env, []string{"ANTHROPIC_BASE_URL", "TOKEN", "EMPTY"})
	if want := []string{"PATH=/bin", "X=ANTHROPIC_BASE_URL"}; !slices.Equal(got, want) {
		t.Errorf("withoutVars = %q, want %q", got, want)
	}
	if !slices.Equal(withoutVars(env, nil), env) {
		t.Error("withoutVars with no names changed env")
	}
}

// FuzzParse: whatever Parse takes, Args writes back the same.
func FuzzParse(f *testing.F) {
	f.Add("/bin/bash\x00--unset\x00A\x00--connect\x0080,81\x00--\x00-c\x00ls")
	f.Add("/bin/bash\x00--\x00-c\x00ls")
	f.Add("/bin/bash\x00--connect\x00\x00--\x00-c\x00ls")
	f.Fuzz(func(t *testing.T, s string) {
		args := append([]string{Verb, "--shell"}, strings.Split(s, "\x00")...)
		shell, r, rest, ok := Parse(args)
		if !ok {
			return
		}
		if back := append(Args(shell, r), rest...); !slices.Equal(back, args) {
			t.Errorf("Parse(%q) then Args gives %q", args, back)
		}
	})
}
