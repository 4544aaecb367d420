package main

import (
	"debug/buildinfo"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReleaseBinaryIsStatic: `make build` makes a binary with cgo off, no
// program interpreter (dynamic loader) and no shared library it needs, so
// that it runs on any Linux host it is copied to.
func TestReleaseBinaryIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	bin := filepath.Join(t.TempDir(), "metaharness")
	cmd := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
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
		t.Errorf("make build made a binary with CGO_ENABLED=%q, want 0", cgo)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a program interpreter (PT_INTERP): it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || len(out) == 0 {
		t.Errorf("%s --version: %v %q", bin, err, out)
	}
}
