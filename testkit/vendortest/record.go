package vendortest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// EnvLog names the file real-client tests append their outcomes to, one
// line each: "ran", "skipped" or "failed", a tab, the test's name, a tab and
// the reason it skipped. scripts/test sets it and prints the summary.
const EnvLog = "METAHARNESS_REAL_CLIENTS_LOG"

var (
	recorded sync.Map // testing.TB → *outcome
)

type outcome struct {
	mu     sync.Mutex
	reason string
}

// Record marks t as a real-client test: when it ends, its outcome is
// appended to $METAHARNESS_REAL_CLIENTS_LOG (nothing happens when that is
// unset). Tools, RequireLoopbackOnly and Binary call it; a real-client test
// that checks its prerequisites itself calls it first.
func Record(t testing.TB) {
	path := os.Getenv(EnvLog)
	if path == "" {
		return
	}
	if _, loaded := recorded.LoadOrStore(t, &outcome{}); loaded {
		return
	}
	t.Cleanup(func() {
		o, _ := recorded.LoadAndDelete(t)
		status := "ran"
		switch {
		case t.Skipped():
			status = "skipped"
		case t.Failed():
			status = "failed"
		}
		o.(*outcome).mu.Lock()
		reason := strings.ReplaceAll(o.(*outcome).reason, "\n", " ")
		o.(*outcome).mu.Unlock()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Logf("%s: %v", EnvLog, err)
			return
		}
		defer f.Close()
		// One write per line: appends from parallel test binaries do not interleave.
		if _, err := fmt.Fprintf(f, "%s\t%s\t%s\n", status, t.Name(), reason); err != nil {
			t.Logf("%s: %v", EnvLog, err)
		}
	})
}

// skipReason keeps why t is about to skip, for its record.
func skipReason(t testing.TB, reason string) {
	if o, ok := recorded.Load(t); ok {
		o.(*outcome).mu.Lock()
		o.(*outcome).reason = reason
		o.(*outcome).mu.Unlock()
	}
}
