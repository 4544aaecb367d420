package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

func refusalName(err error) exit.Name {
	var r *exit.Refusal
	if errors.As(err, &r) {
		return r.Name
	}
	return ""
}

// TestTokenFile: a plain token file is the token; an API-key auth.json
// gives its key; a ChatGPT-plan login, by auth_mode or by a tokens object,
// is refused by name, and so is an auth.json with no key.
func TestTokenFile(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		refused  exit.Name
	}{
		{"sk-plain\n", "sk-plain\n", ""},
		{`{"auth_mode":"apikey","OPENAI_API_KEY":"sk-from-login"}`, "sk-from-login", ""},
		{`{"OPENAI_API_KEY":"sk-no-mode","tokens":null}`, "sk-no-mode", ""},
		{`{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"x"}}`, "", RefuseChatgptLogin},
		{`{"auth_mode":"chatgptAuthTokens"}`, "", RefuseChatgptLogin},
		{`{"OPENAI_API_KEY":"sk-x","tokens":{"access_token":"x"}}`, "", RefuseChatgptLogin},
		{`{"auth_mode":"apikey"}`, "", RefuseAuthFileUnusable},
		{`{not json`, "", RefuseAuthFileUnusable},
	} {
		got, err := TokenFile([]byte(tc.in))
		if refusalName(err) != tc.refused || got != tc.want {
			t.Errorf("TokenFile(%s) = %q, %v; want %q, %s", tc.in, got, err, tc.want, tc.refused)
		}
		if err != nil && strings.Contains(err.Error(), "sk-") {
			t.Errorf("the refusal of %s names a key: %v", tc.in, err)
		}
	}
}

// FuzzTokenFile: reading a token file never panics, and a refusal never
// carries the file's content.
func FuzzTokenFile(f *testing.F) {
	for _, s := range []string{"sk-plain", `{"auth_mode":"apikey","OPENAI_API_KEY":"sk-1"}`, `{"auth_mode":"chatgpt","tokens":{"access_token":"SECRETVALUE"}}`, `{"tokens":"SECRETVALUE"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := TokenFile(data)
		if err != nil && bytes.Contains([]byte(err.Error()), []byte("SECRETVALUE")) {
			t.Fatalf("a refusal carries the file's content: %v", err)
		}
	})
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{
		`plain`: `"plain"`, `a"b\c`: `"a\"b\\c"`, "tab\there\nnl\x7f": `"tab\u0009here\u000Anl\u007F"`, "ünï": `"ünï"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCatalogOverride: the fields that add tools are overridden, the
// freeform apply_patch only without native tools; an unknown field is
// refused by name.
func TestCatalogOverride(t *testing.T) {
	entry := json.RawMessage(`{"slug":"s","tool_mode":"code_mode_only","apply_patch_tool_type":"freeform","multi_agent_version":"v2","experimental_supported_tools":["clock"],"priority":1}`)
	for _, native := range []bool{false, true} {
		out, err := catalogOverride("s", entry, native)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Models []map[string]any `json:"models"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Models) != 1 {
			t.Fatalf("override %s: %v", out, err)
		}
		m := doc.Models[0]
		if m["tool_mode"] != nil || m["multi_agent_version"] != nil || len(m["experimental_supported_tools"].([]any)) != 0 || m["priority"] != 1.0 {
			t.Errorf("native=%v: %v", native, m)
		}
		if (m["apply_patch_tool_type"] == nil) == native {
			t.Errorf("native=%v: apply_patch_tool_type %v", native, m["apply_patch_tool_type"])
		}
	}
	if _, err := catalogOverride("s", json.RawMessage(`{"slug":"s","new_tools":true}`), false); refusalName(err) != RefuseModelUnconstrained {
		t.Errorf("an unknown field: %v, want %s", err, RefuseModelUnconstrained)
	}
}

// TestObserveDefault: the default slug is the listed entry of lowest
// priority, hidden ones aside; a slug not bundled has no entry.
func TestObserveDefault(t *testing.T) {
	models := []json.RawMessage{
		json.RawMessage(`{"slug":"hidden","priority":0,"visibility":"hide"}`),
		json.RawMessage(`{"slug":"b","priority":5,"visibility":"list"}`),
		json.RawMessage(`{"slug":"a","priority":1,"visibility":"list"}`),
	}
	obs, err := observe(models, "")
	if err != nil || obs.DefaultModel != "a" || !bytes.Contains(obs.Model, []byte(`"slug":"a"`)) {
		t.Fatalf("%+v %v", obs, err)
	}
	if obs, err := observe(models, "unbundled"); err != nil || obs.Model != nil {
		t.Fatalf("unbundled: %+v %v", obs, err)
	}
	if _, err := observe([]json.RawMessage{json.RawMessage(`{"priority":1}`)}, ""); refusalName(err) != RefuseModelsUnreadable {
		t.Fatalf("an entry with no slug: %v", err)
	}
}

// TestNativeBinary: a native binary is itself; the npm wrapper resolves to
// the native binary in either npm layout, and is refused when none is there.
func TestNativeBinary(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	elf := write("bin/codex", "\x7fELF")
	if got, err := nativeBinary(elf); err != nil || got != elf {
		t.Errorf("native: %s %v", got, err)
	}
	rel := "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
	hoisted := write("hoisted/node_modules/@openai/codex/bin/codex.js", "#!/usr/bin/env node\n")
	want := write("hoisted/node_modules/"+rel, "\x7fELF")
	if got, err := nativeBinary(hoisted); err != nil || got != want {
		t.Errorf("hoisted: %s %v, want %s", got, err, want)
	}
	nested := write("nested/@openai/codex/bin/codex.js", "#!/usr/bin/env node\n")
	want = write("nested/@openai/codex/node_modules/"+rel, "\x7fELF")
	if got, err := nativeBinary(nested); err != nil || got != want {
		t.Errorf("nested: %s %v, want %s", got, err, want)
	}
	lone := write("lone/@openai/codex/bin/codex.js", "#!/bin/sh\n")
	if _, err := nativeBinary(lone); refusalName(err) != RefuseNativeBinaryMissing {
		t.Errorf("no native binary: %v", err)
	}
}

// TestReaderDirections: the reader tells the run's lines from app-server's
// by their ids: its own notification and answers make no event, an error
// answer is a warning, an unknown notification is opaque.
func TestReaderDirections(t *testing.T) {
	r := NewReader()
	lines := []string{
		`{"id":"mh-1","method":"config/read","params":{}}`,
		`{"method":"initialized"}`,
		`{"id":"mh-1","error":{"code":-32600,"message":"nope"}}`,
		`{"id":0,"method":"item/tool/call","params":{}}`,
		`{"id":0,"result":{"contentItems":[],"success":true}}`,
		`{"method":"thread/status/changed","params":{}}`,
		`{"method":"some/new/notification","params":{}}`,
		`not json`,
	}
	var got []string
	for _, l := range lines {
		for _, it := range r.Read([]byte(l)) {
			got = append(got, it.Event.EventName())
		}
	}
	if strings.Join(got, " ") != "warning opaque opaque" {
		t.Errorf("events %v, want warning opaque opaque", got)
	}
}

// TestHTTPStatus reads the status out of codex's codexErrorInfo shapes.
func TestHTTPStatus(t *testing.T) {
	for in, want := range map[string]int{
		`{"httpConnectionFailed":{"httpStatusCode":401}}`: 401, `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`: 429,
		`"internalServerError"`: 0, `{"other":{"httpStatusCode":null}}`: 0,
	} {
		got := httpStatus(json.RawMessage(in))
		if (got == nil && want != 0) || (got != nil && *got != want) {
			t.Errorf("httpStatus(%s) = %v, want %d", in, got, want)
		}
	}
}

// FuzzReader: the reader never panics on a line, and every event it makes
// writes as a valid event line. Seeded with the recorded conversations.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob("../../conformance/testdata/c2/codex/*.in.jsonl")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r := NewReader()
		var out bytes.Buffer
		w := record.NewWriter(&out, "fuzz")
		for _, l := range [][]byte{[]byte(`{"id":"mh-1","method":"thread/start","params":{}}`), line, line} {
			for _, it := range r.Read(l) {
				if err := w.Emit(it.Event); err != nil {
					t.Fatalf("event %s does not write: %v", it.Event.EventName(), err)
				}
			}
		}
		_ = r.Terminal()
	})
}
