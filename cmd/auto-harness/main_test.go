package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metaharness/metaharness/testkit/fakeplane"
	"github.com/metaharness/metaharness/testkit/scriptcmd"
)

// TestMain lets the test binary stand in for auto-harness inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"auto-harness": func() { os.Exit(Main(context.Background(), os.Args[1:], processEnv(), os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI cases in testdata/script: exit codes, error
// lines, what reaches the control plane and what is written for the
// workflow.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) { scriptcmd.ExitCode(ts, neg, args) },
			"plane":    planeCmd,
		},
		Setup: func(env *testscript.Env) error {
			env.Values[planeKey{}] = new(*fakeplane.Server)
			return nil
		},
	})
}

// planeKey holds a script's stand-in control plane among its values.
type planeKey struct{}

// planeCmd is the stand-in control plane (testkit/fakeplane) of a script:
//
//	plane start                            start it: $HARNESS_URL is its URL, and
//	                                       $SSL_CERT_FILE makes its certificate trusted
//	plane reply METHOD URI STATUS [FILE]…  the route's replies in turn (a body from FILE)
//	plane hang METHOD URI                  the route never answers
//	plane requests                         print what it was sent
func planeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: plane start | reply METHOD URI STATUS [FILE]… | hang METHOD URI | requests")
	}
	if args[0] == "start" {
		p := fakeplane.New()
		ts.Defer(p.Close)
		ca := filepath.Join(ts.Getenv("WORK"), ".plane-ca.pem")
		ts.Check(p.WriteCA(ca))
		ts.Setenv("SSL_CERT_FILE", ca)
		ts.Setenv("HARNESS_URL", p.URL)
		*ts.Value(planeKey{}).(**fakeplane.Server) = p
		return
	}
	p := *ts.Value(planeKey{}).(**fakeplane.Server)
	if p == nil {
		ts.Fatalf("plane %s: no plane started", args[0])
	}
	switch {
	case args[0] == "reply" && len(args) >= 4:
		var replies []fakeplane.Reply
		for i := 3; i < len(args); i++ {
			status, err := strconv.Atoi(args[i])
			ts.Check(err)
			r := fakeplane.Reply{Status: status}
			if i+1 < len(args) {
				if _, err := strconv.Atoi(args[i+1]); err != nil {
					i++
					r.Body = ts.ReadFile(args[i])
				}
			}
			replies = append(replies, r)
		}
		p.Handle(args[1]+" "+args[2], replies...)
	case args[0] == "hang" && len(args) == 3:
		p.Handle(args[1]+" "+args[2], fakeplane.Reply{Hang: true})
	case args[0] == "requests" && len(args) == 1:
		for _, r := range p.Requests() {
			fmt.Fprintf(ts.Stdout(), "%s %s\n", r.Method, r.URI)
			for _, h := range []string{"Authorization", "Idempotency-Key", "Content-Type"} {
				if v := r.Header.Get(h); v != "" {
					fmt.Fprintf(ts.Stdout(), "  %s: %s\n", h, v)
				}
			}
			if r.Body != "" {
				fmt.Fprintf(ts.Stdout(), "  body: %s\n", r.Body)
			}
		}
	default:
		ts.Fatalf("plane: bad arguments %q", args)
	}
}
