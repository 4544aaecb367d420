package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/metaharness/metaharness/confine"
)

// A yes is kept and believed for the same binary on the same host, with the
// controls it found; a no is never kept; a binary touched since is probed
// again.
func TestConfinableKeepsOnlyAYes(t *testing.T) {
	if _, err := confine.ThisHost(); err != nil {
		t.Skipf("no host identity here: %v", err)
	}
	dir := t.TempDir()
	self := filepath.Join(dir, "metaharness")
	if err := os.WriteFile(self, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"METAHARNESS_CACHE": filepath.Join(dir, "cache")}
	probes := 0
	answer := error(nil)
	found := confine.Controls{Seccomp: true, LandlockABI: 7}
	probe := func(string) (confine.Controls, error) { probes++; return found, answer }

	for i := range 2 {
		c, err := confinable(self, env, probe)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if !c.Seccomp || c.LandlockABI != 7 {
			t.Errorf("run %d: controls %+v, want the probe's", i, c)
		}
	}
	if probes != 1 {
		t.Fatalf("two runs probed %d times, want 1 (the second believes the kept yes)", probes)
	}

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(self, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := confinable(self, env, probe); err != nil || probes != 2 {
		t.Fatalf("a touched binary: %v after %d probes, want a new probe", err, probes)
	}

	no := map[string]string{"METAHARNESS_CACHE": filepath.Join(dir, "other")}
	answer = errors.New("user namespaces cannot be made here")
	for range 2 {
		if _, err := confinable(self, no, probe); err == nil {
			t.Fatal("a failed probe was not reported")
		}
	}
	if probes != 4 {
		t.Fatalf("a no was kept: %d probes, want 4", probes)
	}
}
