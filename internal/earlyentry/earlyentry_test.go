package earlyentry

import (
	"strings"
	"testing"

	"github.com/metaharness/metaharness/confine"
	b10xhook "github.com/metaharness/metaharness/launcher/b10x/hook"
)

// TestTake: only the invocations metaharness itself writes are taken;
// anything else is left to main's parser, which answers help and usage
// errors.
func TestTake(t *testing.T) {
	// What metaharness writes: the init's and the probe's argv, the
	// command sandbox's as a kind's script writes it, and the hook command
	// of every b10x plan under frame or ask.
	for _, args := range [][]string{
		confine.InitArgs(),
		confine.NestedProbeArgs(),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{}), "-c", "ls"),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{}), "-lc", "ls"),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{Unset: []string{"ANTHROPIC_BASE_URL", "X_1"}, Connect: []uint16{8080, 1}}), "-c", "ls"),
		append(confine.SandboxArgs("/bin/bash", confine.SandboxRules{Connect: []uint16{}}), "-c", "ls"),
		b10xhook.Args("/run/x/decisions.sock"),
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
		{"internal-b10x-hook"},
		{"internal-b10x-hook", "--help"},
		{"internal-b10x-hook", "--socket"},
		{"internal-b10x-hook", "--socket", ""},
		{"internal-b10x-hook", "--socket="},
		{"internal-b10x-hook", "--socket", "--help"},
		{"internal-b10x-hook", "--socket", "a", "b"},
		{"internal-b10x-hook", "--socket", "relative.sock"},
		{"internal-b10x-hook", "--socket=/run/x/decisions.sock"},
		// Claude Code's hook is no program since issue 38: the verb is gone.
		{"internal-hook", "--socket", "/run/x/decisions.sock"},
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

// TestHookWithoutARun: the taken hook blocks when no run listens.
func TestHookWithoutARun(t *testing.T) {
	run := Take(b10xhook.Args(t.TempDir() + "/gone.sock"))
	var out, errb strings.Builder
	code := run(strings.NewReader(`{"hook":"before-call","call":{"call_id":"c1","name":"file_read","arguments":{}},"entry":"file_read","workspace":"/w"}`+"\n"), &out, &errb)
	if code != b10xhook.Block || !strings.Contains(out.String(), `{"reason":"metaharness's decision channel did not answer`) || errb.Len() > 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d and a block", code, out.String(), errb.String(), b10xhook.Block)
	}
}
