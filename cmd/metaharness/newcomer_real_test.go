package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/record"
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

// TestReadmeKeylessFirstRun runs the README's first own run as written:
// its install-and-build block, then its keyless block (the scripted model
// and `run claude`, then `run codex`, then `run gemini`, each inside
// scripts/loopback-only), in a copy of the clone with a fresh HOME, as a
// newcomer would. Each run answers the script's text and audits ok.
func TestReadmeKeylessFirstRun(t *testing.T) {
	tools := vendortest.Tools(t)
	vendortest.RequireLoopbackOnly(t)
	if filepath.Base(tools) != "npm" {
		t.Skipf("METAHARNESS_NODE_TOOLS=%s is not a cache's npm directory, which install-node-tools --link needs", tools)
	}
	first := readmeSection(t, "## Your first own run")
	keyless := readmeSection(t, "### Without a key: the scripted model")
	blocks := append(fencedBlocks(first, "sh")[:1], fencedBlocks(keyless, "sh")...)
	if len(blocks) != 2 {
		t.Fatalf("want the install block and one keyless block, found %d blocks", len(blocks))
	}
	clone := copyOfClone(t)
	home := t.TempDir()
	env := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "METAHARNESS_CACHE=" + filepath.Dir(tools)}, goEnv(t)...)
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", strings.Join(blocks, "\n"))
	cmd.Dir, cmd.Env = clone, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's commands: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	script, err := scripted.LoadScript(filepath.Join(clone, "examples", "first-run", "hello.json"))
	if err != nil {
		t.Fatal(err)
	}
	answer := script.Turns[0].Text
	for _, want := range []struct{ in, what string }{
		{stdout.String(), `"event":"session.ended","final_answer":{"text":"` + answer + `"`},
		{stdout.String(), `"event":"stream.closed","events":`},
		{stderr.String(), "audit verdict: ok (exit 0)"},
		{stderr.String(), "scriptedmodel: request 1: POST /v1/messages: turn 1 of 1"},
		{stderr.String(), "scriptedmodel: request 1: POST /v1/responses: turn 1 of 1"},
		{stderr.String(), ":streamGenerateContent: turn 1 of 1"},
	} {
		if !strings.Contains(want.in, want.what) {
			t.Errorf("the output lacks %q\nstdout:\n%s\nstderr:\n%s", want.what, stdout.String(), stderr.String())
		}
	}
	if n := strings.Count(stdout.String(), `"event":"stream.closed"`); n != 3 {
		t.Errorf("%d event streams closed, want 3 (claude, codex, gemini)", n)
	}
}

// copyOfClone copies the files of this clone that git would check out or
// add (tracked, and untracked but not ignored) into a new directory.
func copyOfClone(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "metaharness")
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		fi, err := os.Lstat(src)
		if err != nil {
			continue // deleted in the work tree, not yet in the index
		}
		dst := filepath.Join(clone, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err == nil {
				err = os.Symlink(target, dst)
			}
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(dst, b, fi.Mode().Perm())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return clone
}

// goEnv is the go command's caches and module settings as this host has
// them, for a command run under a fresh HOME: what a newcomer's HOME would
// hold after make demo, so that `go run` fetches nothing inside the
// loopback-only namespace.
func goEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPROXY", "GOFLAGS", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return env
}

// TestDocsAskExample runs docs/decisions.md's worked example of
// --decisions ask as written (its ./metaharness this test's binary): the
// real Claude Code against the scripted model, examples/ask/allow-reads.sh
// answering each waiting call. The script is the one the page shows, the
// run exits 0, every event line the page shows is in the stream (less the
// fields that differ between runs), and every command line it shows is a
// command the run reads.
func TestDocsAskExample(t *testing.T) {
	o := newOperator(t, "")
	docBytes, err := os.ReadFile("../../docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(docBytes)
	shown := regexp.MustCompile("(?ms)^```sh allow-reads.sh\n(.*?)^```$").FindStringSubmatch(doc)
	if shown == nil || shown[1] != readFile(t, "../../examples/ask/allow-reads.sh") {
		t.Error("docs/decisions.md does not show examples/ask/allow-reads.sh as it is")
	}
	blocks := fencedBlocks(doc, "sh")
	if len(blocks) != 1 || !strings.Contains(blocks[0], "./metaharness run claude") {
		t.Fatalf("docs/decisions.md has %d plain sh blocks, want the one command running ./metaharness", len(blocks))
	}
	self, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", strings.ReplaceAll(blocks[0], "./metaharness", self))
	cmd.Dir, cmd.Env = repoRoot, append(o.env, goEnv(t)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the page's command: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	volatile := func(line string) map[string]any {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			return nil
		}
		for _, k := range []string{"seq", "run", "at", "latency_ms"} {
			delete(m, k)
		}
		return m
	}
	var got []map[string]any
	for _, l := range strings.Split(stdout.String(), "\n") {
		if m := volatile(l); m != nil {
			got = append(got, m)
		}
	}
	exchange := regexp.MustCompile("(?ms)^```json exchange (event|command)\n(.*?)^```$").FindAllStringSubmatch(doc, -1)
	if len(exchange) == 0 {
		t.Fatal("docs/decisions.md shows no exchange lines")
	}
	for _, m := range exchange {
		line := strings.TrimSpace(m[2])
		if m[1] == "command" {
			if _, err := record.ParseCommand([]byte(line)); err != nil {
				t.Errorf("the page's command %s is not one the run reads: %v", line, err)
			}
			continue
		}
		want := volatile(line)
		if want == nil || !slices.ContainsFunc(got, func(g map[string]any) bool { return cmp.Equal(g, want) }) {
			t.Errorf("the stream holds no event like the page's\n%s\nstream:\n%s", line, stdout.String())
		}
	}
}
