package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary stand in for metaharness inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"metaharness": main})
}

// TestScripts runs the CLI cases in testdata/script: exit codes, refusal
// lines and reports, the way FiloSottile/age tests cmd/age.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// The scripts see none of the caller's secrets or logging.
			env.Setenv("METAHARNESS_LOG", "")
			env.Setenv("HOME", env.WorkDir+"/home")
			return os.MkdirAll(env.WorkDir+"/home", 0o755)
		},
	})
}
