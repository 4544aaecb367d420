// Package hook is the before-call hook program a b10x run under
// --decisions frame or ask puts first in the loop's hooks file (the hidden
// internal-b10x-hook verb). The loop starts it for every call its approver
// admitted, writes it one JSON document on stdin and reads its exit status:
// 0 proceeds, 2 blocks with {"reason": …} on stdout, anything else is a
// hook that failed (docs/b10x-hooks.md). It is a package of its own,
// importing neither the launcher nor the MCP and proxy libraries, so that
// the process the loop starts for every call runs it before their package
// initialisation (see internal/earlyentry).
package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/record"
)

// The exit statuses the loop reads: proceed, and block with the reason on
// stdout. Every answer of this program is one of the two.
const (
	Proceed = 0
	Block   = 2
)

// Verb is the hidden verb the loop starts the hook as.
const Verb = "internal-b10x-hook"

// MaxAnswer is the loop's bound on a hook's stdout (MAX_HOOK_STDOUT_BYTES):
// a longer answer is a hook that failed, never a cut one, so a reason is
// cut here to fit, saying so.
const MaxAnswer = 16 << 10

// DefaultBlockReason stands in for a blank deny reason: the model is always
// told why.
const DefaultBlockReason = "metaharness denied this call and gave no further reason"

// Args are the hook's arguments after its program's name, for the run
// whose decision channel listens at socket.
func Args(socket string) []string { return []string{Verb, "--socket", socket} }

// Run is the hook: it reads the loop's before-call document from stdin,
// asks the run's decision channel at socket, writes the answer to stdout
// and returns the exit status the loop reads it by. Every failure is a
// block naming it, never a status the loop would take for a broken hook;
// the only error returned is one writing stdout.
func Run(stdin io.Reader, stdout io.Writer, socket string) (int, error) {
	d := decision(stdin, decide.Dial(socket))
	if d.Decision == record.Allow || d.Decision == record.Abstain {
		// Abstain leaves the call to the loop's own pipeline, whose approver
		// has already admitted it by the time this hook runs.
		return Proceed, nil
	}
	_, err := stdout.Write(Answer(d.Reason))
	return Block, err
}

// Main is Run as the process the loop starts. It ignores SIGINT: a run
// stops the loop by sending its process group SIGINT, which the loop
// answers between calls, so the answer this hook is giving (a deny, the
// run's last word on the call) still reaches it.
func Main(stdin io.Reader, stdout io.Writer, socket string) (int, error) {
	signal.Ignore(syscall.SIGINT)
	return Run(stdin, stdout, socket)
}

func decision(stdin io.Reader, asker decide.Asker) record.Decision {
	payload, err := io.ReadAll(io.LimitReader(stdin, decide.MaxInput))
	if err != nil {
		return record.DenyDecision("metaharness could not read the hook's document, so nothing ran: " + err.Error())
	}
	in, err := ParseInput(payload)
	if err != nil {
		return record.DenyDecision("metaharness could not read the hook's document, so nothing ran: " + err.Error())
	}
	// No deadline of our own: the channel's backstop lies between the run's
	// deadline and the loop's hook timeout.
	d, err := asker.Ask(context.Background(), decide.Request{
		Seam: record.SeamHook, CallID: in.Call.CallID, Tool: in.Call.Name, Entry: in.Entry, Input: in.Call.Arguments,
	})
	if err != nil {
		return record.DenyDecision("metaharness's decision channel did not answer, so nothing ran: " + err.Error())
	}
	return d
}

// Input is the loop's before-call document (its hooks.rs call_document).
// Keys it may add later are read past; a key given twice is refused.
type Input struct {
	Hook string `json:"hook"`
	Call struct {
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"call"`
	// Entry is the invoked entry (file_write), which differs from the name
	// only when the call came through a verb (tool_invoke).
	Entry     string `json:"entry"`
	Workspace string `json:"workspace"`
}

// ParseInput reads the hook's stdin: a before-call document naming a call.
func ParseInput(b []byte) (*Input, error) {
	var in Input
	if err := jsonscan.Decode(b, &in, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("the before-call document cannot be read: %w", err)
	}
	if in.Hook != "before-call" {
		return nil, fmt.Errorf("the document is for the %q point, and metaharness's hook answers before-call only", in.Hook)
	}
	if in.Call.CallID == "" || in.Call.Name == "" {
		return nil, fmt.Errorf("the before-call document names no call_id or name")
	}
	return &in, nil
}

// Answer is a block's stdout: {"reason": …} and a newline, within the
// loop's bound. A reason too long for it is cut at a character boundary,
// to the longest prefix that fits with a note of the cut, which says how
// much there was.
func Answer(reason string) []byte {
	if reason == "" {
		reason = DefaultBlockReason
	}
	if b := encode(reason); len(b) <= MaxAnswer {
		return b
	}
	cut := func(keep int) []byte {
		for keep > 0 && !utf8.RuneStart(reason[keep]) {
			keep--
		}
		return encode(fmt.Sprintf("%s … (metaharness cut this reason at %d of %d bytes, to fit the loop's %d-byte bound on a hook's answer)", reason[:keep], keep, len(reason), MaxAnswer))
	}
	lo, hi := 0, len(reason) // cut(lo) fits; cut(hi) does not
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; len(cut(mid)) <= MaxAnswer {
			lo = mid
		} else {
			hi = mid
		}
	}
	return cut(lo)
}

func encode(reason string) []byte {
	b, _ := json.Marshal(struct {
		Reason string `json:"reason"`
	}{reason})
	return append(b, '\n')
}

// Said is the reason the loop reads from a block answering reason: what
// it tells the model and writes on its hook-ran line.
func Said(reason string) string {
	var v struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(Answer(reason), &v)
	return v.Reason
}
