package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandGetsTheURL: the command after -- runs once the model serves,
// {url} replaced and $SCRIPTED_MODEL_URL set, and its exit status is the
// program's; a request to the URL gets the script's turn.
func TestCommandGetsTheURL(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"hi there"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	probe := `test "$1" = "$SCRIPTED_MODEL_URL" && curl -sS -X POST -d '{"model":"m","stream":false,"messages":[]}' "$1/v1/messages" > "$2"; exit 7`
	code, err := serve([]string{"anthropic-messages", script, "--", "sh", "-c", probe, "sh", urlArg, out})
	if err != nil || code != 7 {
		t.Fatalf("serve: code %d, %v; want the command's 7", code, err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "hi there") {
		t.Errorf("the model answered %q (%v), want the script's text", b, err)
	}
}

// TestUsage: a missing script, an unknown dialect and an empty command are
// refused with exit 2, naming what is wrong.
func TestUsage(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(script, []byte(`[{"text":"x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"anthropic-messages"}, "wants an API and a script file"},
		{[]string{"anthropic-messages", script, "--"}, "wants an API and a script file"},
		{[]string{"anthropic-messages", script + ".absent"}, "reading the model script"},
		{[]string{"openai-chat", script}, `not "openai-chat"`},
	} {
		code, err := serve(c.args)
		if code != 2 || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %q: code %d, %v; want 2 and %q", c.args, code, err, c.want)
		}
	}
}
