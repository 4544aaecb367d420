package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// custodyStandIn is a stand-in claude that, run in a cwd named second,
// prints what it reads of the first run's token file and records (under
// KEEP), marks its start in its cwd, and waits there for a go file (or
// 20 s) before it ends.
const custodyStandIn = `#!/bin/bash
case "$1" in --version) echo "2.1.328 (Claude Code)"; exit 0;; esac
if [ "$(basename "$PWD")" = second ]; then
  echo "other token: [$(cat KEEP/first.token 2>&1)]" >&2
  echo "other records: [$(ls KEEP/first-records 2>&1)]" >&2
fi
: > started
for i in $(seq 1 200); do [ -f go ] && break; sleep 0.1; done
printf '%s\n' '{"type":"system","subtype":"init","cwd":"'"$(pwd)"'","session_id":"s1","tools":[],"mcp_servers":[],"model":"fake","permissionMode":"dontAsk","apiKeySource":"none","claude_code_version":"2.1.328","output_style":"default","plugins":[]}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"stop_reason":"end_turn","terminal_reason":"completed","permission_denials":[]}'
`

// TestRunsKeepEachOthersCustody: two runs of one user, each with a
// --token-file and --records-dir where no view hides them by itself
// (outside HOME, /tmp and /run): the second run's child reads the first
// run's token file and records as empty (the registry of live runs covers
// them), and the second run's attestation says its own token file is
// readable by the first run's child, started before it (H4 and H6 gaps
// naming it), since a running child cannot be given more to hide.
func TestRunsKeepEachOthersCustody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the test keeps its runs' custody in /var/lib, where only root may make a directory")
	}
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	keep, err := os.MkdirTemp("/var/lib", "mh-custody-")
	if err != nil {
		t.Skipf("no place outside the views' hidden directories: %v", err)
	}
	defer os.RemoveAll(keep)
	root := t.TempDir()
	home, runtime := filepath.Join(root, "home"), filepath.Join(root, "runtime")
	if err := os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".local", "bin", "claude"), []byte(strings.ReplaceAll(custodyStandIn, "KEEP", keep)), 0o755); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewAnthropicServer(scripted.Texts("done", "done"))
	defer up.Close()
	start := func(name string) (*exec.Cmd, *bytes.Buffer, string) {
		tree := filepath.Join(root, name)
		if err := os.MkdirAll(tree, 0o755); err != nil {
			t.Fatal(err)
		}
		token := filepath.Join(keep, name+".token")
		if err := os.WriteFile(token, []byte("sk-ant-"+name+"-REAL-TOKEN\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		records := filepath.Join(keep, name+"-records")
		if err := os.Mkdir(records, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(records, "an-earlier-record"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "claude", "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-file", token,
			"--records-dir", records, "--cwd", tree, "--scratch-cwd", "-p", "hi")
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "METAHARNESS_RUNTIME_DIR=" + runtime}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr, tree
	}
	first, _, firstTree := start("first")
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	waitFor(t, filepath.Join(firstTree, "started"))
	second, stderr, secondTree := start("second")
	waitFor(t, filepath.Join(secondTree, "started"))
	for _, tree := range []string{firstTree, secondTree} {
		if err := os.WriteFile(filepath.Join(tree, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = second.Wait()
	_ = first.Wait()
	out := stderr.String()
	if !strings.Contains(out, "other token: []") || strings.Contains(out, "REAL-TOKEN") || !strings.Contains(out, "other records: []") {
		t.Errorf("the second run's child read the first run's custody:\n%s", out)
	}
	att, err := os.ReadFile(filepath.Join(keep, "second-records", latestRun(t, filepath.Join(keep, "second-records")), "metaharness-attestation.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"h4", "h6"} {
		want := regexp.MustCompile(`"row": "` + row + `",\s*"why": "the child of another live run of this user, started before this one, can read ` + regexp.QuoteMeta(filepath.Join(keep, "second.token")))
		if !want.Match(att) {
			t.Errorf("the second run's attestation does not say on %s that the first run's child can read its token file:\n%s", row, att)
		}
	}
}

// waitFor waits up to 20 s for path to exist.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for range 200 {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// latestRun is the one run directory in a --records-dir.
func latestRun(t *testing.T, dir string) string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			return e.Name()
		}
	}
	t.Fatalf("no run's records in %s", dir)
	return ""
}
