package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metaharness/metaharness/testkit/schemacheck"
)

// envSchemaFailures names the file a metaharness started by a test appends
// each line to that it wrote and its published schema refuses.
const envSchemaFailures = "METAHARNESS_TEST_SCHEMA_FAILURES"

// Lines written in this process (tests that call Main) are held to the
// published schemas.
func init() { schemacheck.Install(nil) }

// checkedMain is the metaharness that scripts and the real-client tests
// start (this test binary, on their PATH): main, with every line it writes
// held to the published schemas. A script's Setup names the file its
// failures go to (schemaFailures); a test that builds the environment
// itself gets exit 99 and the line on stderr, which no check expects.
func checkedMain() {
	path := os.Getenv(envSchemaFailures)
	schemacheck.Install(func(line []byte, err error) {
		msg := fmt.Sprintf("schemacheck: a line metaharness wrote does not match the published schema: %v\n%s", err, line)
		if path == "" {
			fmt.Fprint(os.Stderr, msg)
			os.Exit(99)
		}
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if ferr == nil {
			_, ferr = f.WriteString(msg)
			_ = f.Close()
		}
		if ferr != nil {
			fmt.Fprint(os.Stderr, msg)
			os.Exit(99)
		}
	})
	main()
}

// schemaFailures makes a script fail when a metaharness it ran wrote a
// line its published schema refuses.
func schemaFailures(env *testscript.Env) {
	path := filepath.Join(env.WorkDir, ".schema-failures")
	env.Setenv(envSchemaFailures, path)
	env.Defer(func() {
		if b, err := os.ReadFile(path); err == nil {
			env.T().Fatal(string(b))
		}
	})
}
