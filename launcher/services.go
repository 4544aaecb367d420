package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// services is the run's side of the seam (Services), for one session.
type services struct {
	r    *run
	plan *kind.Plan
	eng  *frame.Engine
	sess kind.Session
	wire *wireCheck

	mu      sync.Mutex
	child   *child
	stopped bool // Stop was called: a signal the child dies of is metaharness's

	once   sync.Once
	server *mcpserve.Server // the in-process catalogue server, made at the first Perform
	srvErr error
}

var _ kind.Services = (*services)(nil)

func (v *services) Engine() *frame.Engine { return v.eng }

func (v *services) Contract() *mcpserve.Contract { return v.r.in.contract }

func (v *services) Started(at string, ev *record.SessionStarted) {
	v.r.complete(ev, v.plan)
	v.Emit(at, ev)
}

func (v *services) Emit(at string, ev record.Event) {
	if r, ok := ev.(*record.ToolResult); ok {
		v.wire.result(r)
	}
	var p *string
	if at != "" {
		p = &at
	}
	v.r.emit(p, ev)
}

func (v *services) Verify(req decide.Request) *record.Decision {
	d, w := v.wire.verify(req)
	if w != nil {
		v.r.emit(nil, w)
	}
	return d
}

func (v *services) Wire() *kind.WireView { return v.wire.view }

func (v *services) NotOnWire(what string) {
	v.wire.noteMismatch()
	v.r.emit(nil, &record.Warning{Code: attest.RecordNotOnWire, Message: what + "; the wire never carried it, so it is not recorded as the model's"})
}

func (v *services) Decide(ctx context.Context, req decide.Request) record.Decision {
	if d := v.Verify(req); d != nil {
		return *d
	}
	name := req.Tool
	switch req.Seam {
	case record.SeamOwnedTool:
		name = v.r.d.CatalogueName(req.Tool)
	case record.SeamHook:
	default:
		return record.DenyDecision("metaharness knows no seam " + req.Seam + ", so nothing ran")
	}
	return v.eng.Decide(ctx, frame.Call{CallID: req.CallID, Name: name, Input: req.Input, Seam: req.Seam}, nil)
}

// answerer is what answers the decision channel's requests and the
// decision endpoint's: the session, when it is an Answerer, else Decide.
func (v *services) answerer() func(context.Context, decide.Request) record.Decision {
	if a, ok := v.sess.(kind.Answerer); ok {
		return a.Answer
	}
	return v.Decide
}

func (v *services) Perform(ctx context.Context, tool string, args json.RawMessage, callID string) (string, bool, error) {
	v.once.Do(func() {
		if v.r.in.contract == nil {
			v.srvErr = errors.New("this run has no --catalogue, so it performs no catalogue call")
			return
		}
		v.server, v.srvErr = mcpserve.NewServer(mcpserve.Options{
			Contract: v.r.in.contract, Workspace: v.r.tree.cwd, Writable: v.r.in.contract.Writes(),
			Asker: decide.AskerFunc(func(ctx context.Context, req decide.Request) (record.Decision, error) {
				return v.Decide(ctx, req), nil
			}),
		})
	})
	if v.srvErr != nil {
		return "", false, v.srvErr
	}
	return v.server.Call(ctx, tool, args, callID)
}

func (v *services) setChild(c *child) {
	v.mu.Lock()
	v.child = c
	v.mu.Unlock()
}

// Stop ends the child's process group in the background: a headless vendor
// has no control line, so stopping a turn is stopping the group (reference
// notes a23), and a conversing kind's last resort is the same.
func (v *services) Stop() {
	v.mu.Lock()
	c := v.child
	v.stopped = true
	v.mu.Unlock()
	if c != nil {
		go c.Stop(context.Background())
	}
}

// killedUnasked reports a child that died of a signal metaharness did not
// send (another process killed it, the agent's own tools perhaps): its
// record's end is then not the vendor's own word.
func (v *services) killedUnasked(p *record.Process) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return p != nil && p.Kind == record.ProcessSignaled && !v.stopped
}

func (v *services) close() {
	if v.server != nil {
		_ = v.server.Close()
	}
}
