package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/testkit/b10xstandin"
	"github.com/metaharness/metaharness/testkit/fakevendor"
	"github.com/metaharness/metaharness/testkit/scriptcmd"
)

// TestMain lets the test binary stand in for metaharness inside scripts
// (every line it writes held to the published schemas, checkedMain),
// for the vendors (`vendor claude` puts the stand-in where a run looks for
// it; testkit/fakevendor, and testkit/b10xstandin for b10x-harness)
// and for an embedder answering a run's stream on its stdin.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"metaharness":  checkedMain,
		"claude":       fakevendor.ClaudeMain,
		"codex":        fakevendor.CodexMain,
		"gemini":       fakevendor.GeminiMain,
		"b10x-harness": b10xstandin.MainFromTestscript,
		"embedder":     embedderMain,
	})
}

// TestScripts runs the CLI cases in testdata/script: exit codes, refusal
// lines and reports, the way FiloSottile/age tests cmd/age.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"exitcode": exitcode, "vendor": vendorCmd, "seqfile": seqfile, "upstream": upstreamCmd, "collector": collectorCmd},
		Setup: func(env *testscript.Env) error {
			// The scripts see none of the caller's secrets or logging.
			env.Setenv("METAHARNESS_LOG", "")
			env.Setenv("HOME", env.WorkDir+"/home")
			// $REC is a place for a run's records outside $WORK, which
			// a run given --cwd $WORK may not write its records into.
			env.Setenv("REC", env.WorkDir+"-rec")
			schemaFailures(env)
			if err := os.MkdirAll(env.WorkDir+"-rec", 0o755); err != nil {
				return err
			}
			return os.MkdirAll(env.WorkDir+"/home", 0o755)
		},
	})
}

// exitcode N CMD ARGS… runs CMD like exec and fails unless it exits with
// exactly N: `! exec` accepts any non-zero status, and 1, 2 and 3 mean
// different things here. An exit 3 of `metaharness run` (an embedder's
// too) must also print exactly one line on stderr saying what nobody found
// out and why.
func exitcode(ts *testscript.TestScript, neg bool, args []string) {
	if scriptcmd.ExitCode(ts, neg, args) == 3 && runsRun(args[1:]) {
		var lines []string
		for _, l := range strings.Split(ts.ReadFile("stderr"), "\n") {
			if strings.HasPrefix(l, "metaharness: ") && !strings.HasPrefix(l, "metaharness: warning: ") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 {
			ts.Fatalf("metaharness run exited 3 with %d metaharness: lines on stderr, want exactly one saying what nobody found out and why: %q", len(lines), lines)
		}
	}
}

// runsRun says whether the command line starts `metaharness run`, itself
// or under an embedder (embedder RULE… -- metaharness run …).
func runsRun(args []string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "metaharness" && args[i+1] == "run" {
			return true
		}
	}
	return false
}

// seqfile FILE N LINE appends LINE to FILE N times, each %d in it replaced
// by the line's number (1…N): inputs too large to check in, such as a tool
// contract of thousands of entries.
func seqfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: seqfile FILE N LINE")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("seqfile: %q is not a number", args[1])
	}
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strings.ReplaceAll(args[2], "%d", strconv.Itoa(i)) + "\n")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	ts.Check(err)
	_, err = f.WriteString(b.String())
	ts.Check(err)
	ts.Check(f.Close())
}

// upstreamCmd is `upstream anthropic|openai SCRIPT`: a scripted model
// server (conformance/scripted) answering from the JSON script file for the
// rest of the script, its root URL in $UPSTREAM.
func upstreamCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: upstream anthropic|openai SCRIPT")
	}
	script, err := scripted.LoadScript(ts.MkAbs(args[1]))
	ts.Check(err)
	var srv *scripted.Server
	switch args[0] {
	case "anthropic":
		srv = scripted.NewAnthropicServer(script)
	case "openai":
		srv = scripted.NewOpenAIServer(script)
	default:
		ts.Fatalf("upstream: %q is neither anthropic nor openai", args[0])
	}
	ts.Defer(srv.Close)
	ts.Setenv("UPSTREAM", srv.URL())
}
