package b10xstandin

import (
	"bytes"
	"os"
	"path/filepath"
)

// Name is the program name the stand-in answers to.
const Name = "b10x-harness"

// MainIfInvoked runs the stand-in and exits when the test binary was
// started as b10x-harness (a link Install made); otherwise it returns, and
// the test binary goes on to its tests. Call it first in TestMain.
func MainIfInvoked() {
	if filepath.Base(invokedAs()) == Name {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// Install links the running test binary into dir as b10x-harness, so that
// a run whose child PATH includes dir starts the stand-in. script, when not
// nil, is written beside it as the stand-in's Config.
func Install(dir string, script []byte) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, Name)
	if err := os.Symlink(self, p); err != nil {
		return "", err
	}
	if script != nil {
		if err := os.WriteFile(filepath.Join(dir, Name+".json"), script, 0o644); err != nil {
			return "", err
		}
	}
	return p, nil
}

// invokedAs is the program path the process was started under, as exec was
// given it: argv[0] from /proc/self/cmdline, which a link keeps (os.Args[0]
// may have been rewritten by testscript, and os.Executable resolves links).
func invokedAs() string {
	if b, err := os.ReadFile("/proc/self/cmdline"); err == nil {
		if i := bytes.IndexByte(b, 0); i > 0 {
			return string(b[:i])
		}
	}
	return os.Args[0]
}
