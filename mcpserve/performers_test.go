package mcpserve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// tree makes a workspace and, beside it, an outside directory holding a
// secret, and returns both.
func tree(t *testing.T) (ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "secret.txt"), "SECRET\n")
	write(t, filepath.Join(ws, "a.txt"), "alpha\nbeta needle\n")
	write(t, filepath.Join(ws, "sub", "b.txt"), "gamma needle\n")
	return ws, outside
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func openWS(t *testing.T, dir string, writable bool) *workspace {
	t.Helper()
	w, err := openWorkspace(dir, writable)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// args builds checked arguments from a JSON object.
func args(t *testing.T, js string) Arguments {
	t.Helper()
	a, err := objectMembers([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func do(t *testing.T, w *workspace, entry, js string) (string, *CallError) {
	t.Helper()
	return perform(context.Background(), w, entry, args(t, js))
}

func TestPerformersInsideTheWorkspace(t *testing.T) {
	ws, _ := tree(t)
	w := openWS(t, ws, true)
	symlink(t, "sub/b.txt", filepath.Join(ws, "inner-link"))

	if got, cerr := do(t, w, "fs.read", `{"path":"a.txt"}`); cerr != nil || got != "alpha\nbeta needle\n" {
		t.Errorf("fs.read: %q %v", got, cerr)
	}
	if got, cerr := do(t, w, "fs.read", `{"path":"inner-link"}`); cerr != nil || got != "gamma needle\n" {
		t.Errorf("fs.read through a link that stays inside: %q %v", got, cerr)
	}
	if got, cerr := do(t, w, "fs.read", `{"path":"a.txt","max_bytes":3}`); cerr != nil || !strings.HasPrefix(got, "alp\n[fs.read: truncated at 3 of 18 bytes") {
		t.Errorf("fs.read max_bytes: %q %v", got, cerr)
	}
	got, cerr := do(t, w, "fs.list", `{}`)
	if cerr != nil || !strings.Contains(got, `"name": "a.txt"`) || !strings.Contains(got, `"type": "symlink"`) || !strings.Contains(got, `"type": "dir"`) {
		t.Errorf("fs.list: %s %v", got, cerr)
	}
	got, cerr = do(t, w, "fs.search", `{"pattern":"needle"}`)
	if cerr != nil || !strings.Contains(got, `"path": "a.txt"`) || !strings.Contains(got, `"path": "sub/b.txt"`) || strings.Contains(got, "inner-link") {
		t.Errorf("fs.search (links are not followed in a walk): %s %v", got, cerr)
	}
	if _, cerr := do(t, w, "fs.write", `{"path":"new/dir/c.txt","text":"made"}`); cerr != nil {
		t.Errorf("fs.write: %v", cerr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new/dir/c.txt")); string(b) != "made" {
		t.Errorf("fs.write wrote %q", b)
	}
	if _, cerr := do(t, w, "fs.edit", `{"path":"a.txt","old":"beta","new":"BETA"}`); cerr != nil {
		t.Errorf("fs.edit: %v", cerr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "alpha\nBETA needle\n" {
		t.Errorf("fs.edit left %q", b)
	}
	for js, want := range map[string]string{
		`{"path":"a.txt","old":"zzz","new":"y"}`: `"old" does not occur`,
		`{"path":"a.txt","old":"a","new":"y"}`:   `"old" occurs 2 times`,
		`{"path":"a.txt","old":"","new":"y"}`:    `"old" is empty`,
	} {
		if _, cerr := do(t, w, "fs.edit", js); cerr == nil || !strings.Contains(cerr.Error(), want) {
			t.Errorf("fs.edit %s: %v, want %q", js, cerr, want)
		}
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 4 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestPerformersRefuseLeavingTheWorkspace: absolute paths, .. and links
// that lead out are refused by name, and nothing outside is touched.
func TestPerformersRefuseLeavingTheWorkspace(t *testing.T) {
	ws, outside := tree(t)
	w := openWS(t, ws, true)
	symlink(t, outside, filepath.Join(ws, "out-dir"))
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(ws, "out-abs"))
	symlink(t, "../outside/secret.txt", filepath.Join(ws, "out-rel"))
	for _, tc := range []struct{ entry, js, want string }{
		{"fs.read", `{"path":"/etc/passwd"}`, "is the absolute path"},
		{"fs.read", `{"path":"../outside/secret.txt"}`, "has a .. component"},
		{"fs.read", `{"path":"sub/../a.txt"}`, "has a .. component"},
		{"fs.read", `{"path":"out-dir/secret.txt"}`, "leads out of the workspace"},
		{"fs.read", `{"path":"out-abs"}`, "leads out of the workspace"},
		{"fs.read", `{"path":"out-rel"}`, "leads out of the workspace"},
		{"fs.read", `{"path":"sub"}`, "is a directory, not a regular file"},
		{"fs.read", `{"path":"nope"}`, "names nothing in the workspace"},
		{"fs.read", `{"path":"a.txt\u0000"}`, "holds a NUL byte"},
		{"fs.list", `{"path":"out-dir"}`, "leads out of the workspace"},
		{"fs.search", `{"pattern":"SECRET","path":"out-dir"}`, "leads out of the workspace"},
		{"fs.write", `{"path":"out-dir/new.txt","text":"x"}`, "leads out of the workspace"},
		{"fs.write", `{"path":"out-rel","text":"x"}`, "is a symbolic link"},
		{"fs.write", `{"path":"/tmp/x","text":"x"}`, "is the absolute path"},
		{"fs.edit", `{"path":"out-rel","old":"SECRET","new":"x"}`, "is a symbolic link"},
		{"fs.edit", `{"path":"out-dir/secret.txt","old":"SECRET","new":"x"}`, "leads out of the workspace"},
	} {
		_, cerr := do(t, w, tc.entry, tc.js)
		if cerr == nil || !strings.Contains(cerr.Error(), tc.want) || cerr.Field != "path" || !strings.HasPrefix(cerr.Error(), tc.entry+": field \"path\"") {
			t.Errorf("%s %s: %v, want %q naming the entry and field", tc.entry, tc.js, cerr, tc.want)
		}
	}
	if got, cerr := do(t, w, "fs.search", `{"pattern":"SECRET"}`); cerr != nil || strings.Contains(got, "out-") {
		t.Errorf("fs.search followed a link out: %s %v", got, cerr)
	}
	assertOutsideUntouched(t, outside)
}

func assertOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("something was created outside the workspace: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "SECRET\n" {
		t.Errorf("the file outside was changed to %q", b)
	}
}

func TestPerformersReadOnlyAndDeclaredFields(t *testing.T) {
	ws, _ := tree(t)
	w := openWS(t, ws, false)
	for _, tc := range []struct{ entry, js, want, field string }{
		{"fs.write", `{"path":"c.txt","text":"x"}`, "this workspace is read-only", ""},
		{"fs.edit", `{"path":"a.txt","old":"alpha","new":"x"}`, "this workspace is read-only", ""},
		{"fs.read", `{"path":"a.txt","encoding":"utf8"}`, "is not a field the fs.read performer declares (path, max_bytes)", "encoding"},
		{"fs.read", `{"path":7}`, "must be a string", "path"},
		{"fs.read", `{"path":"a.txt","max_bytes":0}`, "must be an integer from 1", "max_bytes"},
		{"fs.search", `{"pattern":""}`, "is empty", "pattern"},
		{"fs.search", `{"pattern":"a","max_results":1.5}`, "must be an integer", "max_results"},
		{"shell.exec", `{}`, "is not performed by this build", ""},
	} {
		_, cerr := do(t, w, tc.entry, tc.js)
		if cerr == nil || !strings.Contains(cerr.Error(), tc.want) || cerr.Field != tc.field || cerr.Entry != tc.entry {
			t.Errorf("%s %s: %v (field %q), want %q on field %q", tc.entry, tc.js, cerr, fieldOf(cerr), tc.want, tc.field)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "c.txt")); !os.IsNotExist(err) {
		t.Error("a read-only workspace was written")
	}
}

func fieldOf(c *CallError) string {
	if c == nil {
		return ""
	}
	return c.Field
}

// TestPerformersDoNotBlockOnAFIFO: a named pipe is refused, not waited on.
func TestPerformersDoNotBlockOnAFIFO(t *testing.T) {
	ws, _ := tree(t)
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := openWS(t, ws, true)
	if _, cerr := do(t, w, "fs.read", `{"path":"pipe"}`); cerr == nil || !strings.Contains(cerr.Error(), "named pipe") {
		t.Errorf("fs.read of a FIFO: %v", cerr)
	}
	if _, cerr := do(t, w, "fs.search", `{"pattern":"x"}`); cerr != nil {
		t.Errorf("fs.search past a FIFO: %v", cerr)
	}
}

// TestRaceSymlinkSwappedForDirectory flips a directory of the workspace
// between itself and a link to the outside while reads, listings, searches
// and writes go through it: none ever reaches the outside.
func TestRaceSymlinkSwappedForDirectory(t *testing.T) {
	ws, outside := tree(t)
	w := openWS(t, ws, true)
	d := filepath.Join(ws, "d")
	real, link := filepath.Join(ws, "d.real"), filepath.Join(ws, "d.link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(real, "secret.txt"), "inside\n")
	symlink(t, outside, link)

	stop := flipper(t, func(i int) {
		if i%2 == 0 {
			_ = os.Rename(real, d)
			_ = os.Rename(d, real)
		} else {
			_ = os.Rename(link, d)
			_ = os.Rename(d, link)
		}
		// fs.write creates d when it finds none: clear it, and restore what
		// a failed rename lost, for the next swap.
		_ = os.RemoveAll(d)
		if _, err := os.Lstat(link); err != nil {
			_ = os.Symlink(outside, link)
		}
		if _, err := os.Lstat(real); err != nil {
			_ = os.Mkdir(real, 0o755)
			_ = os.WriteFile(filepath.Join(real, "secret.txt"), []byte("inside\n"), 0o644)
		}
	})
	// Until both states were seen at least once (bounded): the race ran.
	var sawOut, sawIn bool
	for i := 0; i < 1000 || !(sawOut && sawIn) && i < 200_000; i++ {
		for _, call := range []struct{ entry, js string }{
			{"fs.read", `{"path":"d/secret.txt"}`},
			{"fs.list", `{"path":"d"}`},
			{"fs.search", `{"pattern":"SECRET","path":"d"}`},
			{"fs.write", `{"path":"d/planted.txt","text":"x"}`},
			{"fs.edit", `{"path":"d/secret.txt","old":"SECRET","new":"PWNED"}`},
		} {
			got, cerr := do(t, w, call.entry, call.js)
			sawOut = sawOut || cerr != nil && strings.Contains(cerr.Reason, "leads out of the workspace")
			sawIn = sawIn || got == "inside\n"
			if strings.Contains(got, "SECRET\n") || strings.Contains(got, `"text": "SECRET"`) || strings.Contains(got, "PWNED") {
				t.Fatalf("round %d: %s reached the outside: %s", i, call.entry, got)
			}
		}
	}
	stop()
	if !sawOut || !sawIn {
		t.Fatalf("the swap was never observed (link refused %v, inside read %v)", sawOut, sawIn)
	}
	assertOutsideUntouched(t, outside)
}

// TestRaceFileSwappedForLink swaps a file of the workspace for a link to
// the outside while it is written and edited: the rename replaces the link,
// it never writes through it.
func TestRaceFileSwappedForLink(t *testing.T) {
	ws, outside := tree(t)
	w := openWS(t, ws, true)
	target, file, link := filepath.Join(ws, "t.txt"), filepath.Join(ws, "t.file"), filepath.Join(ws, "t.link")
	write(t, file, "SECRET\n")
	symlink(t, filepath.Join(outside, "secret.txt"), link)
	var swaps atomic.Int64
	stop := flipper(t, func(i int) {
		src := file
		if i%2 == 1 {
			src = link
		}
		_ = os.Rename(src, target)
		swaps.Add(1)
		_ = os.Rename(target, src)
		// A write replaces what it finds with a plain file: put the link back.
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			_ = os.Remove(link)
			_ = os.Symlink(filepath.Join(outside, "secret.txt"), link)
		}
		if _, err := os.Lstat(file); err != nil {
			_ = os.WriteFile(file, []byte("SECRET\n"), 0o644)
		}
	})
	var sawLink bool
	for i := 0; i < 1000 || !sawLink && i < 200_000; i++ {
		if _, cerr := do(t, w, "fs.write", `{"path":"t.txt","text":"written\n"}`); cerr != nil && strings.Contains(cerr.Reason, "is a symbolic link") {
			sawLink = true
		}
		_, _ = do(t, w, "fs.edit", `{"path":"t.txt","old":"SECRET","new":"PWNED"}`)
		_, _ = do(t, w, "fs.edit", `{"path":"t.txt","old":"written","new":"PWNED"}`)
	}
	stop()
	if swaps.Load() == 0 || !sawLink {
		t.Fatalf("the swap was never observed (%d swaps)", swaps.Load())
	}
	assertOutsideUntouched(t, outside)
}

// flipper runs f(0), f(1), … on a goroutine until the returned stop is
// called; stop waits for it.
func flipper(t *testing.T, f func(i int)) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load(); i++ {
			f(i)
		}
	}()
	stop = func() { done.Store(true); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

func TestSubjects(t *testing.T) {
	for _, tc := range []struct {
		entry, input string
		want         []string
	}{
		{"fs.read", `{"path":"a/../b"}`, []string{"file:a/../b"}},
		{"fs.list", `{}`, []string{"file:."}},
		{"fs.search", `{"pattern":"x"}`, []string{"file:."}},
		{"run", `{"argv":["make","test"]}`, []string{"proc:make"}},
		{"web.fetch", `{"url":"x"}`, []string{}},
	} {
		got, _ := json.Marshal(Subjects(tc.entry, []byte(tc.input)))
		want, _ := json.Marshal(tc.want)
		if string(got) != string(want) {
			t.Errorf("%s %s: %s, want %s", tc.entry, tc.input, got, want)
		}
	}
	if OperationOf("fs.edit") != "file.edit" || OperationOf("run") != "" || OperationOf("shell") != "" {
		t.Error("the operation table drifted")
	}
}
