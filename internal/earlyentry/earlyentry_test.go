package earlyentry

import (
	"strings"
	"testing"
)

// TestTake: only the invocations metaharness itself writes are taken;
// anything else is left to main's parser, which answers help and usage
// errors.
func TestTake(t *testing.T) {
	for _, args := range [][]string{
		{"internal-init"},
		{"internal-init", "--nested-probe"},
		{"internal-hook", "--socket", "/run/x/decisions.sock"},
		{"internal-hook", "--socket=/run/x/decisions.sock"},
	} {
		if Take(args) == nil {
			t.Errorf("%q is not taken", args)
		}
	}
	for _, args := range [][]string{
		nil,
		{"run", "claude"},
		{"internal-init", "--help"},
		{"internal-init", "--nested-probe", "x"},
		{"internal-hook"},
		{"internal-hook", "--help"},
		{"internal-hook", "--socket"},
		{"internal-hook", "--socket", ""},
		{"internal-hook", "--socket="},
		{"internal-hook", "--socket", "--help"},
		{"internal-hook", "--socket", "a", "b"},
		{"--version", "internal-init"},
	} {
		if Take(args) != nil {
			t.Errorf("%q is taken; main's parser should answer it", args)
		}
	}
}

// TestHookWithoutARun: the taken hook answers deny when no run listens.
func TestHookWithoutARun(t *testing.T) {
	run := Take([]string{"internal-hook", "--socket", t.TempDir() + "/gone.sock"})
	var out, errb strings.Builder
	code := run(strings.NewReader(`{"tool_name":"Bash","tool_use_id":"t"}`), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `"permissionDecision":"deny"`) || errb.Len() > 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and a deny", code, out.String(), errb.String())
	}
}
