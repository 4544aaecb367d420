package launcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
)

// unbuilt is a kind with a descriptor and nothing built.
type unbuilt struct{}

func (unbuilt) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{Name: "unbuilt", Binary: "unbuilt-cli", Install: "install it",
		Capabilities: &kind.Capabilities{VersionsPinned: []string{"1.2.3"}}}
}

// TestDoctorLinesAreChecks: every line doctor prints is SPEC §3.3's
// `ok|warn|fail <check>: <reason>`; a kind whose run is not built is never
// called clean, even with its binary on the pin; a missing binary is a
// fail line (exit 1) naming the fix, not a refusal.
func TestDoctorLinesAreChecks(t *testing.T) {
	line := regexp.MustCompile(`^(ok|warn|fail) [a-z]+: \S`)
	home := t.TempDir()
	for _, c := range []struct {
		name   string
		script string
		want   []string
	}{
		{"missing", "", []string{"fail binary: unbuilt-cli is not an executable file on " + home + "/.local/bin:/usr/local/bin:/usr/bin:/bin; install it", "fail run: run unbuilt is not built yet", "ok loopback: "}},
		{"on the pin", "#!/bin/sh\necho 'unbuilt-cli 1.2.3'\n", []string{"ok binary: ", "ok version: 1.2.3, on the adapter's pin (1.2.3)", "fail run: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.script != "" {
				bin := filepath.Join(home, ".local", "bin")
				if err := os.MkdirAll(bin, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(bin, "unbuilt-cli"), []byte(c.script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			code, err := Doctor(context.Background(), unbuilt{}, func(k string) string { return map[string]string{"HOME": home}[k] }, "", &out)
			if err != nil || code != exit.Gap {
				t.Fatalf("Doctor = %d, %v; want exit 1 and no error", code, err)
			}
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if !line.MatchString(l) {
					t.Errorf("not a check line: %q", l)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), "\n"+w) && !strings.HasPrefix(out.String(), w) {
					t.Errorf("no line starting %q in:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "clean") {
				t.Errorf("a kind whose run is not built was called clean:\n%s", out.String())
			}
		})
	}
}
