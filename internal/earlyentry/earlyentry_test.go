package earlyentry

import (
	"strings"
	"testing"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/launcher/claude/hook"
)

// TestTake: only the invocations metaharness itself writes are taken;
// anything else is left to main's parser, which answers help and usage
// errors.
func TestTake(t *testing.T) {
	// What metaharness writes: the init's and the probe's argv, the
	// command sandbox's as a kind's script writes it, and the hook command
	// of every claude plan.
	for _, args := range [][]string{
		confine.InitArgs(),
		confine.NestedProbeArgs(),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{}), "-c", "ls"),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{}), "-lc", "ls"),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{Unset: []string{"ANTHROPIC_BASE_URL", "X_1"}, Connect: []uint16{8080, 1}}), "-c", "ls"),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{Connect: []uint16{}}), "-c", "ls"),
		hook.Args("/run/x/decisions.sock"),
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
		{"internal-hook", "--socket", "relative.sock"},
		{"internal-hook", "--socket=/run/x/decisions.sock"},
		{"--version", "internal-init"},
		confine.SandboxArgs("/bin/bash", confine.SandboxRules{}),
		append(confine.SandboxArgs("bash", confine.SandboxRules{}), "-c", "ls"),
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
		if Take(args) != nil {
			t.Errorf("%q is taken; main's parser should answer it", args)
		}
	}
}

// TestHookWithoutARun: the taken hook answers deny when no run listens.
func TestHookWithoutARun(t *testing.T) {
	run := Take(hook.Args(t.TempDir() + "/gone.sock"))
	var out, errb strings.Builder
	code := run(strings.NewReader(`{"tool_name":"Bash","tool_use_id":"t"}`), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `"permissionDecision":"deny"`) || errb.Len() > 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and a deny", code, out.String(), errb.String())
	}
}
