//go:build linux

package confine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/testkit/vendortest"
)

// TestCodexSandboxInside: the vendor's own sandbox still works inside ours,
// under the seccomp filter a run installs where the host can.
// The pinned Codex's `codex sandbox` (its bundled bubblewrap, in user, PID,
// mount and network namespaces of its own, nested in the vendor's) runs a
// command confined the way Codex confines a shell call under
// workspace-write: the command writes its workspace, cannot write /, and is
// PID 1's child in a PID namespace of bubblewrap's.
func TestCodexSandboxInside(t *testing.T) {
	self := available(t)
	tools := vendortest.Tools(t)
	vendortest.RequireLoopbackOnly(t)
	install := filepath.Join(tools, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl")
	codex := filepath.Join(install, "bin", "codex")
	if _, err := os.Stat(codex); err != nil {
		t.Skipf("no native codex under %s: %v", install, err)
	}
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "codex-home")
	for _, d := range []string{work, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := testSpec(self)
	s.Namespaces = append(s.Namespaces, Net)
	s.Hidden = []string{"/root", "/home", "/run"}
	s.Fresh = []string{"/tmp"}
	s.ReadOnly = append(s.ReadOnly, install)
	s.Writable = []string{work, home}
	s.DenySyscalls = DeniedSyscalls
	out, ex := run(t, s, Command{
		Program: codex,
		Args: []string{codex, "sandbox", "-c", `sandbox_mode="workspace-write"`, "--",
			"sh", "-c", `echo inside > here.txt; touch /codex-sandbox-probe 2>/dev/null && echo ROOT-$(echo WRITABLE); tr '\0' ' ' < /proc/1/cmdline; echo`},
		Env: []string{"HOME=" + home, "CODEX_HOME=" + home, "PATH=/usr/bin:/bin"},
		Dir: work,
	})
	if ex.Code == nil || *ex.Code != 0 {
		t.Fatalf("codex sandbox ended %+v:\n%s", ex, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "here.txt")); err != nil || !bytes.Equal(b, []byte("inside\n")) {
		t.Errorf("the sandboxed command did not write its workspace: %q %v\n%s", b, err, out)
	}
	if strings.Contains(out, "ROOT-WRITABLE") {
		t.Error("inside both sandboxes, / was writable")
	}
	if !strings.Contains(out, "codex-linux-sandbox") {
		t.Errorf("the command was not inside Codex's own PID namespace (PID 1 is not its sandbox helper):\n%s", out)
	}
}
