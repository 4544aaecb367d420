package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

// EnvDecisionsSocket names the decision socket when --decisions-socket is
// not given.
const EnvDecisionsSocket = "METAHARNESS_DECISIONS_SOCKET"

// RecordingAsker is the standalone decider: it allows every call and
// records each decision as one JSON line on w.
func RecordingAsker(w io.Writer) decide.Asker { return &recordingAsker{w: w} }

type recordingAsker struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *recordingAsker) Ask(_ context.Context, req decide.Request) (record.Decision, error) {
	d := record.AllowDecision()
	req.Input = nil // the record names the call; its input may be a whole file
	line, _ := json.Marshal(struct {
		Decided string `json:"decided"`
		decide.Request
	}{d.Decision, req})
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.w.Write(append(line, '\n'))
	return d, nil
}
