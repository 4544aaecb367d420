package decide

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/metaharness/metaharness/record"
)

// TestDeadline: an answerer that never answers is cut off
// at the asker's deadline and the call is denied.
func TestDeadline(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sock := filepath.Join(t.TempDir(), "slow.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ln, func(ctx context.Context, _ Request) record.Decision {
			<-ctx.Done()
			return record.AllowDecision()
		})
	}()
	askCtx, askCancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer askCancel()
	_, err = Dial(sock).Ask(askCtx, Request{Seam: "owned_tool", CallID: "c", Tool: "t"})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("want the deadline, got %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// FuzzLines: the decision channel's two line parsers take any
// bytes without a panic, and what they accept is valid.
func FuzzLines(f *testing.F) {
	for _, s := range []string{`{"decision":"allow"}`, `{"decision":"deny","reason":"no"}`, `{"decision":"replace","input":{"path":"x"}}`,
		`{"decision":"deny"}`, `{"decision":"allow","x":1}`, `{"seam":"owned_tool","call_id":"c","tool":"t","entry":"fs.read","operation":"file.read","subjects":["file:a"],"input":{}}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if d, err := ParseDecision(line); err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("accepted an invalid decision %s: %v", line, err)
			}
		}
		if req, err := ParseRequest(line); err == nil && (req.Seam == "" || req.CallID == "" || req.Tool == "") {
			t.Fatalf("accepted a request without seam, call_id or tool: %s", line)
		}
	})
}
