package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

const doc = `{"hook":"before-call","call":{"call_id":"call_1","name":"file_write","arguments":{"path":"a.md","text":"x"}},"entry":"file_write","workspace":"/w"}` + "\n"

// TestRunAsksTheRun drives the hook against a real decision channel: the
// request is the hook seam's, naming the call, its entry and its
// arguments; the answer is the exit status the loop reads (0 proceeds, 2
// blocks with the reason on stdout); whatever goes wrong blocks, naming it.
func TestRunAsksTheRun(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	answers := make(chan record.Decision, 1)
	asked := make(chan decide.Request, 8)
	served := make(chan error, 1)
	go func() {
		served <- decide.Serve(ctx, ln, func(_ context.Context, req decide.Request) record.Decision {
			asked <- req
			return <-answers
		}, decide.Options{})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	run := func(payload, socket string) (int, string) {
		t.Helper()
		var out strings.Builder
		status, err := Run(strings.NewReader(payload), &out, socket)
		if err != nil {
			t.Fatal(err)
		}
		return status, out.String()
	}
	for _, c := range []struct {
		d      record.Decision
		status int
		out    string
	}{
		{record.AllowDecision(), Proceed, ""},
		{record.AbstainDecision(), Proceed, ""},
		{record.DenyDecision("not under this frame"), Block, `{"reason":"not under this frame"}` + "\n"},
	} {
		answers <- c.d
		status, out := run(doc, sock)
		if status != c.status || out != c.out {
			t.Errorf("%s: exit %d, stdout %q; want %d, %q", c.d.Decision, status, out, c.status, c.out)
		}
		req := <-asked
		if req.Seam != record.SeamHook || req.CallID != "call_1" || req.Tool != "file_write" || req.Entry != "file_write" || string(req.Input) != `{"path":"a.md","text":"x"}` {
			t.Errorf("the request on the wire: %+v", req)
		}
	}
	for payload, says := range map[string]string{
		`{"hook":"after-call","call":{"call_id":"c","name":"n"}}`:                                      `metaharness's hook answers before-call only`,
		`{"hook":"before-call","call":{"name":"n"}}`:                                                   `names no call_id or name`,
		`{"hook":"before-call","call":{"call_id":"c","name":"n","arguments":{"path":"a","path":"b"}}}`: `the key \"path\" is given twice`,
		`not json`: `the before-call document cannot be read`,
	} {
		status, out := run(payload, sock)
		if status != Block || !strings.Contains(out, `{"reason":"metaharness could not read the hook's document, so nothing ran: `) || !strings.Contains(out, says) {
			t.Errorf("%s: exit %d, %s", payload, status, out)
		}
	}
	if status, out := run(doc, filepath.Join(t.TempDir(), "gone.sock")); status != Block || !strings.Contains(out, `metaharness's decision channel did not answer, so nothing ran`) {
		t.Errorf("no run listening: exit %d, %s", status, out)
	}
}

// TestAnAnswerFitsTheLoopsBound: the loop reads more than 16 KiB on a
// hook's stdout as a hook that failed, so a long reason is cut to fit,
// at a character boundary, and says it was cut; Said is what the loop then
// reads.
func TestAnAnswerFitsTheLoopsBound(t *testing.T) {
	if got := Said("no <writes> & no shell"); got != "no <writes> & no shell" {
		t.Errorf("a short reason is read back as %q", got)
	}
	if got := Said(""); got != DefaultBlockReason {
		t.Errorf("a blank reason is read back as %q", got)
	}
	long := strings.Repeat("é<&\u0001", 20000)
	b := Answer(long)
	if len(b) > MaxAnswer {
		t.Fatalf("the answer is %d bytes, past the loop's %d", len(b), MaxAnswer)
	}
	said := Said(long)
	if !utf8.ValidString(said) || !strings.HasPrefix(long, strings.SplitN(said, " … (", 2)[0]) ||
		!strings.Contains(said, "metaharness cut this reason at ") || !strings.Contains(said, " of 100000 bytes") {
		t.Errorf("the cut reason reads %q", said[len(said)-200:])
	}
}

// FuzzAnswer: whatever the reason, the answer is one JSON line within the
// loop's bound whose reason is the given one or a prefix of it, cut.
func FuzzAnswer(f *testing.F) {
	f.Add("no")
	f.Add("")
	f.Add(strings.Repeat("\x00<", 9000))
	f.Add(strings.Repeat("€", 6000))
	f.Fuzz(func(t *testing.T, reason string) {
		b := Answer(reason)
		var v struct {
			Reason string `json:"reason"`
		}
		if len(b) > MaxAnswer || !bytes.HasSuffix(b, []byte("\n")) || json.Unmarshal(b, &v) != nil || v.Reason == "" {
			t.Fatalf("Answer(%q) = %q", reason, b)
		}
	})
}

// FuzzParseInput: the loop's document is outside input; whatever it is,
// parsing returns a before-call Input naming a call, or an error.
func FuzzParseInput(f *testing.F) {
	f.Add([]byte(doc))
	f.Add([]byte(`{"hook":"before-call","call":{"call_id":"","name":"x"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"hook":"before-call","hook":"stop","call":{"call_id":"c","name":"n"}}`))
	f.Add([]byte(`{"hook":"before-call","Call":{"call_id":"c","name":"n"},"call":{"call_id":"d","name":"m"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInput(b)
		if err == nil && (in.Hook != "before-call" || in.Call.CallID == "" || in.Call.Name == "") {
			t.Fatalf("ParseInput(%q) = %+v without an error", b, in)
		}
	})
}
