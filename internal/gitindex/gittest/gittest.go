// Package gittest builds real git repositories for tests, with the git
// binary under an isolated configuration, so that the index reader and
// --context are held to what git itself writes.
package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git runs the real git binary in dir with an isolated configuration
// (no system or global config, a throwaway HOME, fixed identity) and returns
// its stdout.
func Git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("these tests build real repositories with the git binary, which is not on PATH: %v", err)
	}
	base := []string{"-c", "init.defaultBranch=main", "-c", "user.name=metaharness test",
		"-c", "user.email=test@example.invalid", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false"}
	cmd := exec.Command(bin, append(base, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return string(out)
}

// WriteFiles writes files (slash paths relative to dir) with their text.
func WriteFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Repo makes a repository in a fresh directory with files added to
// the index (and committed when commit is set), and returns its root.
func Repo(t *testing.T, files map[string]string, commit bool, initArgs ...string) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, append([]string{"init", "-q"}, initArgs...)...)
	WriteFiles(t, dir, files)
	Git(t, dir, "add", "-A")
	if commit {
		Git(t, dir, "commit", "-q", "-m", "files")
	}
	return dir
}
