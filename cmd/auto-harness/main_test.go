package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metaharness/metaharness/testkit/fakeplane"
	"github.com/metaharness/metaharness/testkit/scriptcmd"
)

// TestMain lets the test binary stand in for auto-harness inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"auto-harness": func() { os.Exit(Main(context.Background(), os.Args[1:], testWorld())) },
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
			"mode":     modeCmd,
		},
		Setup: func(env *testscript.Env) error {
			env.Values[planeKey{}] = new(*fakeplane.Server)
			return nil
		},
	})
}

// modeCmd is `mode FILE PERM`: FILE's permission bits are PERM (octal).
func modeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode FILE PERM")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fmt.Sprintf("%04o", fi.Mode().Perm()); (got == args[1]) == neg {
		ts.Fatalf("%s has mode %s (want %s%s)", args[0], got, map[bool]string{true: "not "}[neg], args[1])
	}
}

// planeKey holds a script's stand-in control plane among its values.
type planeKey struct{}

// planeCmd is the stand-in control plane (testkit/fakeplane) of a script:
//
//	plane start [http]                     start it (https, or plain http): $HARNESS_URL and
//	                                       $HARNESS_API_URL are its URL, and $SSL_CERT_FILE
//	                                       makes its certificate trusted
//	plane reply METHOD URI STATUS [FILE] [NAME:VALUE]…  …
//	                                       the route's replies in turn, each a status, a
//	                                       body from FILE and headers
//	plane hang METHOD URI                  the route never answers
//	plane touch METHOD URI FILE            the route's request creates FILE before the reply
//	plane pages URI N ITEM                 N pages of one item each: URI, then URI?cursor=c1 …,
//	                                       each but the last with its nextCursor; %d in ITEM
//	                                       is the page's number
//	plane requests                         print what it was sent
func planeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: plane start [http] | reply METHOD URI STATUS [FILE] [NAME:VALUE]… | hang METHOD URI | touch METHOD URI FILE | pages URI N ITEM | requests")
	}
	if args[0] == "start" {
		p := fakeplane.New()
		if len(args) == 2 && args[1] == "http" {
			p = fakeplane.NewInsecure()
		} else {
			ca := filepath.Join(ts.Getenv("WORK"), ".plane-ca.pem")
			ts.Check(p.WriteCA(ca))
			ts.Setenv("SSL_CERT_FILE", ca)
		}
		ts.Defer(p.Close)
		ts.Setenv("HARNESS_URL", p.URL)
		ts.Setenv("HARNESS_API_URL", p.URL)
		*ts.Value(planeKey{}).(**fakeplane.Server) = p
		return
	}
	p := *ts.Value(planeKey{}).(**fakeplane.Server)
	if p == nil {
		ts.Fatalf("plane %s: no plane started", args[0])
	}
	switch {
	case args[0] == "reply" && len(args) >= 4:
		p.Handle(args[1]+" "+args[2], replies(ts, args[3:])...)
	case args[0] == "hang" && len(args) == 3:
		p.Handle(args[1]+" "+args[2], fakeplane.Reply{Hang: true})
	case args[0] == "touch" && len(args) == 4:
		file := ts.MkAbs(args[3])
		p.Before(args[1]+" "+args[2], func() { _ = os.WriteFile(file, []byte("someone else's\n"), 0o644) })
	case args[0] == "pages" && len(args) == 4:
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		sep := "?"
		if strings.Contains(args[1], "?") {
			sep = "&"
		}
		for k := 1; k <= n; k++ {
			uri, next := args[1], ""
			if k > 1 {
				uri += fmt.Sprintf("%scursor=c%d", sep, k-1)
			}
			if k < n {
				next = fmt.Sprintf(`,"nextCursor":"c%d"`, k)
			}
			p.Handle("GET "+uri, fakeplane.Reply{Status: 200, Body: fmt.Sprintf(`{"items":[%s]%s}`, strings.ReplaceAll(args[3], "%d", strconv.Itoa(k)), next)})
		}
	case args[0] == "requests" && len(args) == 1:
		for _, r := range p.Requests() {
			fmt.Fprintf(ts.Stdout(), "%s %s\n", r.Method, r.URI)
			for _, h := range []string{"Authorization", "Cookie", "Idempotency-Key", "Content-Type"} {
				if v := r.Header.Get(h); v != "" {
					fmt.Fprintf(ts.Stdout(), "  %s: %s\n", h, v)
				}
			}
			if body, nl := strings.CutSuffix(r.Body, "\n"); r.Body != "" {
				fmt.Fprintf(ts.Stdout(), "  body: %s\n", body)
				if nl {
					fmt.Fprintln(ts.Stdout(), "  (the body ends with a newline)")
				}
			}
		}
	default:
		ts.Fatalf("plane: bad arguments %q", args)
	}
}

// replies reads `STATUS [FILE] [NAME:VALUE]…` groups.
func replies(ts *testscript.TestScript, args []string) []fakeplane.Reply {
	var out []fakeplane.Reply
	for _, a := range args {
		if status, err := strconv.Atoi(a); err == nil {
			out = append(out, fakeplane.Reply{Status: status})
			continue
		}
		if len(out) == 0 {
			ts.Fatalf("plane reply: %q before any status", a)
		}
		r := &out[len(out)-1]
		if name, value, ok := strings.Cut(a, ":"); ok {
			if r.Header == nil {
				r.Header = http.Header{}
			}
			r.Header.Add(name, value)
			continue
		}
		r.Body = ts.ReadFile(a)
	}
	return out
}

// testWorld is the process's world with a clock that sleeps no time (a
// sleep moves it on instead) and random bytes 00 01 02 … in turn, so that
// a script knows a smoke's repository name and marker and waits cost
// nothing.
func testWorld() *world {
	clock := &fakeClock{now: time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)}
	next := byte(0)
	return &world{
		env: processEnv(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, clock: clock,
		randomHex: func(n int) (string, error) {
			b := make([]byte, n)
			for i := range b {
				b[i], next = next, next+1
			}
			return hex.EncodeToString(b), nil
		},
	}
}

// fakeClock is a clock whose Sleep moves it on at once.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return ctx.Err()
}
