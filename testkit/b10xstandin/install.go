package b10xstandin

import (
	"bytes"
	"os"
	"path/filepath"
)

// Name is the program name the stand-in answers to.
const Name = "b10x-harness"

// MainIfInvoked runs the stand-in and exits when the test binary was
// started as b10x-harness (a copy Install made); otherwise it returns, and
// the test binary goes on to its tests. Call it first in TestMain.
func MainIfInvoked() {
	if filepath.Base(invokedAs()) == Name {
		MainFromTestscript()
	}
}

// MainFromTestscript is the stand-in for testscript.Main, which starts it
// when the test binary runs under the name b10x-harness.
func MainFromTestscript() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Install puts the running test binary into dir as b10x-harness, so that a
// run whose child PATH includes dir starts the stand-in: a hard link where
// it can, else a copy, since a confined child may see the program and not
// what a symbolic link points at. script, when not nil, is written beside
// it as the stand-in's Config.
func Install(dir string, script []byte) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, Name)
	if err := os.Link(self, p); err != nil {
		if err := copyFile(self, p); err != nil {
			return "", err
		}
	}
	if script != nil {
		if err := os.WriteFile(filepath.Join(dir, Name+".json"), script, 0o644); err != nil {
			return "", err
		}
	}
	return p, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// invokedAs is the program path the process was started under, as exec was
// given it: argv[0] from /proc/self/cmdline (os.Args[0] may have been
// rewritten by testscript, and os.Executable names the file, not the link).
func invokedAs() string {
	if b, err := os.ReadFile("/proc/self/cmdline"); err == nil {
		if i := bytes.IndexByte(b, 0); i > 0 {
			return string(b[:i])
		}
	}
	return os.Args[0]
}
