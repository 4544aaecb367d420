package main

import (
	"debug/buildinfo"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReleaseBinaryIsStatic: `make build` makes both release binaries,
// metaharness and auto-harness, with cgo off, no program interpreter
// (dynamic loader) and no shared library they need, so that they run on
// any Linux host they are copied to.
func TestReleaseBinaryIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binaries")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	dir := t.TempDir()
	bins := []string{filepath.Join(dir, "metaharness"), filepath.Join(dir, "auto-harness")}
	cmd := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+bins[0], "AH_BIN="+bins[1])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) { checkStatic(t, bin) })
	}
}

// checkStatic fails unless bin was built with cgo off, names no program
// interpreter, needs no shared library and runs (--version).
func checkStatic(t *testing.T, bin string) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cgo := ""
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			cgo = s.Value
		}
	}
	if cgo != "0" {
		t.Errorf("make build made %s with CGO_ENABLED=%q, want 0", bin, cgo)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s names a program interpreter (PT_INTERP): it is dynamically linked", bin)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v (%v)", bin, libs, err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || len(out) == 0 {
		t.Errorf("%s --version: %v %q", bin, err, out)
	}
}
