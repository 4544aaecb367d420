package b10xstandin

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hooked runs the stand-in with a hooks file declaring decls and a script
// whose model makes calls, in a workspace holding notes.md; it returns the
// run, what the model read back, and the workspace.
func hooked(t *testing.T, script Config, decls []map[string]any, extra ...string) (result, []Result, string) {
	t.Helper()
	dir := t.TempDir()
	hooksFile := filepath.Join(dir, "hooks.json")
	b, _ := json.Marshal(map[string]any{"version": 1, "hooks": decls})
	if err := os.WriteFile(hooksFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := standInIn(t, dir, &script, []string{"OPENAI_API_KEY=sk-not-a-real-key"}, run(append([]string{"--hooks", hooksFile}, extra...)...)...)
	var seen Seen
	sb, err := os.ReadFile(filepath.Join(r.dir, "b10x-harness.seen.json"))
	if err == nil {
		_ = json.Unmarshal(sb, &seen)
	}
	return r, seen.Results, dir
}

// standInIn is standIn with its working directory (the workspace "."
// names) at dir, which holds notes.md.
func standInIn(t *testing.T, dir string, script *Config, env []string, args ...string) result {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("the release is on Friday\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return standInAt(t, dir, script, env, args...)
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func before(script string) map[string]any {
	return map[string]any{"on": "before-call", "command": sh(script)}
}

var readNotes = Call{CallID: "call_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"notes.md"}`)}
var writePwned = Call{CallID: "call_2", Name: "file_write", Arguments: json.RawMessage(`{"path":"pwned","text":"x"}`)}

var readAndWrite = Config{Calls: []Call{readNotes, writePwned}, Publish: []string{"file_read", "file_write"}}

func TestABeforeCallHookReadsOneDocumentAndProceedsOnZero(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "stdin.json")
	r, results, ws := hooked(t, Config{Calls: []Call{readNotes}}, []map[string]any{before("cat > " + saved)})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("the document is not one line ending in a newline: %q", b)
	}
	var doc struct {
		Hook string `json:"hook"`
		Call struct {
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"call"`
		Entry     string `json:"entry"`
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	wsReal, _ := filepath.EvalSymlinks(ws)
	if doc.Hook != "before-call" || doc.Call.CallID != "call_1" || doc.Call.Name != "file_read" || string(doc.Call.Arguments) != `{"path":"notes.md"}` ||
		doc.Entry != "file_read" || doc.Workspace != wsReal {
		t.Errorf("document %s", b)
	}
	want := []string{"started", "turn-started", "tool-arguments-delta", "usage", "tool-requested", "hook-ran", "tool-completed", "turn-started", "text-delta", "usage", "finished"}
	if got := r.kinds(t); !slices.Equal(got, want) {
		t.Errorf("records %v\nwant    %v", got, want)
	}
	if !strings.Contains(r.stdout, `{"kind":"hook-ran","point":"before-call","call_id":"call_1","decision":{"kind":"proceed"}}`) {
		t.Errorf("no proceed hook-ran:\n%s", r.stdout)
	}
	if len(results) != 1 || results[0].Failed || results[0].Text != "the release is on Friday\n" {
		t.Errorf("the model read %+v", results)
	}
}

func TestABlockReachesTheModelAsTheLoopWordsIt(t *testing.T) {
	for _, c := range []struct {
		name, script, reason string
	}{
		{"stdout", `printf '{"reason": "no writes in this step"}'; exit 2`, "no writes in this step"},
		{"stderr", `echo 'no writes today' >&2; exit 2`, "no writes today"},
		{"silent", `exit 2`, "hook `/bin/sh` blocked without a reason"},
	} {
		t.Run(c.name, func(t *testing.T) {
			decl := map[string]any{"on": "before-call", "tools": []string{"file_write"}, "command": sh(c.script)}
			r, results, ws := hooked(t, readAndWrite, []map[string]any{decl})
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if strings.Contains(r.stdout, `"hook-ran","point":"before-call","call_id":"call_1"`) {
				t.Error("a hook declared for file_write was asked about file_read")
			}
			if !strings.Contains(r.stdout, `{"kind":"hook-ran","point":"before-call","call_id":"call_2","decision":{"kind":"block","reason":"`+c.reason+`"}}`) ||
				!strings.Contains(r.stdout, `{"kind":"tool-completed","call_id":"call_2","failed":true}`) {
				t.Errorf("records:\n%s", r.stdout)
			}
			if len(results) != 2 || !results[1].Failed || results[1].Text != "`file_write` was blocked by a hook: "+c.reason {
				t.Errorf("the model read %+v", results)
			}
			if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
				t.Error("the blocked write ran")
			}
		})
	}
}

func TestAHookThatCannotAnswerFailsClosedNamingTheProgram(t *testing.T) {
	big := "i=0; while [ $i -lt 200 ]; do printf '%0100d' 0; i=$((i+1)); done; exit 0"
	for _, c := range []struct {
		name    string
		command []string
		timeout int
		says    string
	}{
		{"another status", sh("echo boom >&2; exit 7"), 0, "the hook `/bin/sh` exited 7, which is neither 0 nor 2: boom"},
		{"not there", []string{"/nonexistent/hook"}, 0, "the hook `/nonexistent/hook` could not be started: "},
		{"too much stdout", sh(big), 0, "the hook `/bin/sh` wrote more than 16384 bytes on stdout"},
		{"too slow", sh("sleep 30"), 200, "the hook `/bin/sh` was still running after 200 ms and was killed"},
		{"a grandchild holds the pipe", sh("sleep 30 & exit 0"), 300, "the hook `/bin/sh` exited but left its output open past 300 ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := Config{Calls: []Call{readNotes}, HookTimeoutMS: c.timeout}
			start := time.Now()
			r, results, _ := hooked(t, script, []map[string]any{{"on": "before-call", "command": c.command}})
			if time.Since(start) > 20*time.Second {
				t.Errorf("the hook was waited out, not bounded: %v", time.Since(start))
			}
			if r.code != 0 || !strings.Contains(r.stdout, `"decision":{"kind":"failed","reason":"`) {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if len(results) != 1 || !results[0].Failed || !strings.HasPrefix(results[0].Text, "`file_read` did not run because a hook could not check it: "+c.says) {
				t.Errorf("the model read %+v", results)
			}
		})
	}
}

func TestHooksRunInFileOrderAndTheFirstRefusalWins(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "third-ran")
	r, results, _ := hooked(t, Config{Calls: []Call{readNotes}}, []map[string]any{
		before("exit 0"),
		before(`printf '{"reason": "second said no"}'; exit 2`),
		before("touch " + marker + "; exit 0"),
	})
	if r.code != 0 || len(results) != 1 || results[0].Text != "`file_read` was blocked by a hook: second said no" {
		t.Fatalf("exit %d, the model read %+v", r.code, results)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a hook after the refusal ran")
	}
}

func TestAHookDoesNotSeeTheRunsCredentialVariable(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "env")
	r, _, _ := hooked(t, Config{Calls: []Call{readNotes}}, []map[string]any{before("env > " + saved)}, "--api-key-env", "OPENAI_API_KEY")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "OPENAI_API_KEY") || !strings.Contains(string(b), "PATH=") {
		t.Errorf("the hook's environment:\n%s", b)
	}
}

func TestAfterCallAndStopHooksAreRunAsTheLoopDoes(t *testing.T) {
	r, results, _ := hooked(t, Config{Calls: []Call{readNotes}}, []map[string]any{
		{"on": "after-call", "command": sh(`printf '{"note": "checked"}'`)},
		{"on": "stop", "command": sh(`printf '{"reason": "keep going"}'; exit 2`)},
	})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `{"kind":"hook-ran","point":"after-call","call_id":"call_1","decision":{"kind":"proceed"}}`) ||
		len(results) != 1 || !strings.HasSuffix(results[0].Text, "[hook_notes: checked]") {
		t.Errorf("after-call: %+v\n%s", results, r.stdout)
	}
	if n := strings.Count(r.stdout, `"point":"stop"`); n != 4 || !strings.Contains(r.stdout, `"code":"stop-hook-exhausted"`) ||
		!strings.Contains(r.stdout, `{"kind":"finished","stop":{"kind":"completed"},"turns":5}`) {
		t.Errorf("a stop hook that always blocks is asked four times and the run ends after three more turns:\n%s", r.stdout)
	}
	r, _, _ = hooked(t, Config{Calls: []Call{readNotes}}, []map[string]any{{"on": "stop", "command": sh("exit 9")}})
	if !strings.Contains(r.stdout, `"code":"hook-failed","message":"the stop hook could not decide, so the run ends: the hook `+"`/bin/sh`"+` exited 9`) {
		t.Errorf("a stop hook that fails fails open:\n%s", r.stdout)
	}
}

func TestAHooksFileTheLoopCannotReadIsRefused(t *testing.T) {
	for _, c := range []struct {
		doc, says string
	}{
		{`{"version":2,"hooks":[]}`, "declares version 2 and this build reads version 1"},
		{`{"hooks":[]}`, "missing field `version`"},
		{`{"version":1,"hooks":[{"on":"at-the-end","command":["x"]}]}`, "hook 1 fires `at-the-end`, which is not a hook point"},
		{`{"version":1,"hooks":[{"on":"stop","command":[]}]}`, "hook 1 declares an empty `command`"},
		{`{"version":1,"hooks":[{"on":"before-call","tools":[],"command":["x"]}]}`, "omit it to mean every call"},
		{`{"version":1,"hooks":[{"on":"stop","tools":["run"],"command":["x"]}]}`, "hook 1 is a `stop` hook and declares `tools`"},
		{`{"version":1,"hooks":[],"extra":1}`, "unknown field"},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "hooks.json")
		if err := os.WriteFile(p, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		r := standIn(t, nil, nil, run("--hooks", p)...)
		if r.code != 1 || !strings.HasPrefix(r.stdout, `{"kind":"refused","reason":"the hooks file `+"`"+p+"`: ") || !strings.Contains(r.stdout, c.says) {
			t.Errorf("%s: exit %d\n%s", c.doc, r.code, r.stdout)
		}
	}
}

func TestALoopThatDisobeysItsBeforeCallHooks(t *testing.T) {
	dir := t.TempDir()
	asked := filepath.Join(dir, "asked")
	decl := map[string]any{"on": "before-call", "tools": []string{"file_write"}, "command": sh(`touch ` + asked + `; printf '{"reason": "no writes"}'; exit 2`)}
	for _, c := range []struct {
		disobey  string
		asks     bool
		recorded string // call_2's hook-ran line, "" for none
	}{
		{"overrule", true, `{"kind":"hook-ran","point":"before-call","call_id":"call_2","decision":{"kind":"proceed"}}`},
		{"run-blocked", true, `{"kind":"hook-ran","point":"before-call","call_id":"call_2","decision":{"kind":"block","reason":"no writes"}}`},
		{"ignore", false, ""},
		{"pretend", false, `{"kind":"hook-ran","point":"before-call","call_id":"call_2","decision":{"kind":"proceed"}}`},
	} {
		t.Run(c.disobey, func(t *testing.T) {
			_ = os.Remove(asked)
			script := readAndWrite
			script.Disobey = c.disobey
			r, results, ws := hooked(t, script, []map[string]any{decl})
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(asked); (err == nil) != c.asks {
				t.Errorf("the hook was asked: %v, want %v", err == nil, c.asks)
			}
			if got := strings.Contains(r.stdout, `"kind":"hook-ran","point":"before-call","call_id":"call_2"`); got != (c.recorded != "") || !strings.Contains(r.stdout, c.recorded) {
				t.Errorf("records:\n%s", r.stdout)
			}
			if !strings.Contains(r.stdout, `{"kind":"tool-completed","call_id":"call_2","failed":false}`) || len(results) != 2 || results[1].Text != "wrote 1 bytes to pwned" {
				t.Errorf("the write did not run: %+v\n%s", results, r.stdout)
			}
			if _, err := os.Stat(filepath.Join(ws, "pwned")); err != nil {
				t.Error(err)
			}
		})
	}
	r := standIn(t, &Config{Calls: []Call{readNotes}, Disobey: "obey-sometimes"}, nil, run()...)
	if r.code != 1 || !strings.Contains(r.stderr, `no disobedience "obey-sometimes"; the stand-in knows overrule, run-blocked, ignore, pretend`) {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

func TestRunRunsAnArgvAndFailsOnItsStatus(t *testing.T) {
	damage := Call{CallID: "call_3", Name: "run", Arguments: json.RawMessage(`{"argv":["/bin/sh","-c","echo done > harm; exit 3"]}`)}
	r, results, ws := hooked(t, Config{Calls: []Call{damage}, Publish: []string{"run"}}, []map[string]any{})
	if r.code != 0 || !strings.Contains(r.stdout, `{"kind":"tool-completed","call_id":"call_3","failed":true}`) {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if len(results) != 1 || !results[0].Failed || !strings.Contains(results[0].Text, "exit status 3") {
		t.Errorf("the model read %+v", results)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "harm")); err != nil || string(b) != "done\n" {
		t.Errorf("the failing run did not do its damage: %q %v", b, err)
	}
}

func TestArgumentsOverTheLoopsBoundAreRefusedBeforeTheHooks(t *testing.T) {
	text, _ := json.Marshal(strings.Repeat("x", 64<<10))
	big := Call{CallID: "call_4", Name: "file_write", Arguments: json.RawMessage(`{"path":"big","text":` + string(text) + `}`)}
	r, results, ws := hooked(t, Config{Calls: []Call{big}, Publish: []string{"file_write"}}, []map[string]any{before("exit 0")})
	if r.code != 0 || strings.Contains(r.stdout, `"hook-ran"`) || !strings.Contains(r.stdout, `{"kind":"tool-completed","call_id":"call_4","failed":true}`) {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if len(results) != 1 || results[0].Text != "the arguments for `file_write` are over the 65536 byte bound" {
		t.Errorf("the model read %+v", results)
	}
	if _, err := os.Stat(filepath.Join(ws, "big")); err == nil {
		t.Error("the oversized write ran")
	}
}

// TestSIGINTCancelsBetweenCalls: the loop reads a cancel between calls, so
// the call whose hook is running finishes, and each call after it is
// recorded, refused and never asked about.
func TestSIGINTCancelsBetweenCalls(t *testing.T) {
	dir := t.TempDir()
	started, proceed := filepath.Join(dir, "started"), filepath.Join(dir, "proceed")
	hooksFile := filepath.Join(dir, "hooks.json")
	b, _ := json.Marshal(map[string]any{"version": 1, "hooks": []map[string]any{before("touch " + started + "; while [ ! -e " + proceed + " ]; do sleep 0.02; done")}})
	if err := os.WriteFile(hooksFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := json.Marshal(readAndWrite)
	prog, err := Install(dir, script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("the release is on Friday\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog, run("--hooks", hooksFile)...)
	cmd.Env, cmd.Dir = []string{"PATH=/usr/bin:/bin"}, dir
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// To the loop alone: its hook is not the one told to stop here.
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond)
	if err := os.WriteFile(proceed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var seen Seen
	sb, _ := os.ReadFile(filepath.Join(dir, "b10x-harness.seen.json"))
	_ = json.Unmarshal(sb, &seen)
	tail := `{"kind":"hook-ran","point":"before-call","call_id":"call_1","decision":{"kind":"proceed"}}
{"kind":"tool-completed","call_id":"call_1","failed":false}
{"kind":"tool-requested","call_id":"call_2","name":"file_write","arguments":{"path":"pwned","text":"x"}}
{"kind":"tool-completed","call_id":"call_2","failed":true}
{"kind":"finished","stop":{"kind":"cancelled","reason":"the caller cancelled"},"turns":1}
`
	if cmd.ProcessState.ExitCode() != 2 || !strings.HasSuffix(out.String(), tail) {
		t.Errorf("exit %d\n%s", cmd.ProcessState.ExitCode(), out.String())
	}
	if len(seen.Results) != 2 || seen.Results[0].Failed || seen.Results[1].Text != "the run was cancelled before this call ran" {
		t.Errorf("the model read %+v", seen.Results)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a call after the cancel ran")
	}
}
