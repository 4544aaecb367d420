package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// TestNewcomerFirstRunReal is a newcomer's first own run: after
// `scripts/install-node-tools --link` (which refuses to replace what is not
// its own link), doctor finds both pinned vendors on the child's PATH, on
// their pins, and `run claude` reaches the model: no vendor-not-found.
func TestNewcomerFirstRunReal(t *testing.T) {
	o := newOperator(t, "not-a-real-token")
	tools := vendortest.Tools(t)
	if filepath.Base(tools) != "npm" {
		t.Skipf("METAHARNESS_NODE_TOOLS=%s is not a cache's npm directory, which install-node-tools --link needs", tools)
	}
	bin := filepath.Join(o.home, ".local", "bin")
	if err := os.Remove(filepath.Join(bin, "claude")); err != nil { // newOperator's own link
		t.Fatal(err)
	}
	install := func() (string, string, error) {
		cmd := exec.Command("../../scripts/install-node-tools", "--link")
		cmd.Env = append(o.env, "METAHARNESS_CACHE="+filepath.Dir(tools))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	// Something of the operator's own is in the way: nothing is linked.
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := install(); err == nil || !strings.Contains(stderr, "codex exists and is not a link of ours") {
		t.Fatalf("--link over the operator's own codex: %v\n%s", err, stderr)
	}
	if _, err := os.Lstat(filepath.Join(bin, "claude")); err == nil {
		t.Error("--link refused, and linked claude anyway")
	}
	if err := os.Remove(filepath.Join(bin, "codex")); err != nil {
		t.Fatal(err)
	}

	// Twice: the second run replaces only its own links.
	for range 2 {
		stdout, stderr, err := install()
		if err != nil || strings.TrimSpace(stdout) != tools {
			t.Fatalf("install-node-tools --link: %v, stdout %q\n%s", err, stdout, stderr)
		}
	}
	out, err := o.metaharness("doctor", "claude")
	if err != nil {
		t.Fatalf("doctor claude after --link: %v\n%s", err, out)
	}
	for _, want := range []string{"ok binary: " + filepath.Join(bin, "claude"), "\nok version: 2.1.328,"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor claude lacks %q:\n%s", want, out)
		}
	}
	out, _ = o.metaharness("doctor", "codex") // exit 1 while run codex is not built
	for _, want := range []string{"ok binary: " + filepath.Join(bin, "codex"), "\nok version: 0.169.0,"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor codex lacks %q (the native binary, not the node wrapper):\n%s", want, out)
		}
	}

	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{{Text: "HELLO"}}})
	defer up.Close()
	res := o.run(nil, "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "-p", "hi")
	if res.code != 0 || len(up.Requests()) == 0 {
		t.Errorf("the first run: exit %d, %d model requests; want 0 and at least one\n%s", res.code, len(up.Requests()), res.stderr)
	}
}
