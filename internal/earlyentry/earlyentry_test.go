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
	// What metaharness writes: the init's and the probe's argv and the
	// hook command of every b10x plan under frame or ask (the command
	// sandbox's is internal/earlysandbox's: confine/sandbox's TestParse).
	for _, args := range [][]string{
		confine.InitArgs(),
		confine.NestedProbeArgs(),
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
