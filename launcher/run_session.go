package launcher

import (
	"context"
	"encoding/json"
	"io"
	"os"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// session is the fifth phase: the decision engine and the kind's session,
// the decision channel, the spawn, and the kind's Drive until the child's
// stdout ends; then the wind-up (run_windup.go).
func (r *run) session(ctx context.Context, plan *kind.Plan) (exit.Code, error) {
	transcript, err := os.OpenFile(r.tree.transcript(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return exit.Refused, err
	}
	r.out.files = append(r.out.files, transcript)
	svc, err := r.newServices(plan)
	if err != nil {
		return exit.Refused, err
	}
	defer svc.close()
	stopServing, err := r.serveDecisions(svc)
	if err != nil {
		return exit.Refused, err
	}
	defer stopServing()
	c, stdout, err := r.spawn(ctx, plan, svc)
	if err != nil {
		return exit.Refused, err
	}
	defer r.serveEndpoint(svc, c)()
	stopped := context.AfterFunc(ctx, svc.Stop)
	defer stopped()

	go r.readCommands(svc.eng)
	terminal := svc.sess.Drive(ctx, kind.Pipes{Stdin: c.Stdin(), Stdout: stdout, Transcript: transcript})
	if in := c.Stdin(); in != nil {
		_ = in.Close()
	}
	return r.windUp(ctx, plan, svc, c.Wait(), terminal)
}

// newServices makes the run's side of the kind seam: the decision engine
// and the kind's session driving it.
func (r *run) newServices(plan *kind.Plan) (*services, error) {
	s := r.spec
	svc := &services{r: r, plan: plan, wire: newWireCheck(r.proxy, r.kind, plan)}
	var err error
	svc.eng, err = frame.New(frame.Config{
		Mode: s.Decisions, Frame: r.in.frame, Kind: s.Kind, Events: r.out.events,
		VendorTimeout: r.runner.VendorTimeout(), Resolve: r.resolver(),
		Refuses: r.refusedWith,
		Control: func(c record.Command) error { return svc.sess.Control(c) },
		Stderr:  r.io.Stderr,
	})
	if err != nil {
		return nil, err
	}
	svc.sess = r.runner.NewSession(s, plan, svc)
	return svc, nil
}

// serveDecisions opens the decision channel, where the programs the child
// starts (a hook, the catalogue server) ask before a call runs, when the
// plan starts any. The returned func stops it and waits for the answers
// in flight.
func (r *run) serveDecisions(svc *services) (func(), error) {
	if !svc.plan.DecisionChannel {
		return func() {}, nil
	}
	answer := svc.answerer()
	ln, err := decide.Listen(r.tree.socket)
	if err != nil {
		return nil, exit.Wrap(RefuseDecisionSocket, err, "the decision channel cannot listen in %s", r.tree.root)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = decide.Serve(ctx, ln, answer, decide.Options{Refused: r.channelRefused})
	}()
	return func() { stop(); <-served }, nil
}

// spawn starts the plan's child and, when it has a network namespace of
// its own, serves the proxy inside it.
func (r *run) spawn(ctx context.Context, plan *kind.Plan, svc *services) (*child, io.Reader, error) {
	c, stdout, err := spawnPlan(plan, r.io.Stderr)
	if err != nil {
		return nil, nil, exit.Wrap(RefuseSpawn, err, "the vendor could not be started")
	}
	c.stopSignal = r.d.StopSignal
	svc.setChild(c)
	if r.vendor != nil {
		r.vendor.spawned(c.VendorPid())
	}
	if ls := c.Listeners(); ls.Model != nil {
		err := r.proxy.ServeModel(ls.Model)
		if ls.Gate != nil && err != nil {
			_ = ls.Gate.Close()
		} else if ls.Gate != nil {
			err = r.proxy.ServeGate(ls.Gate)
		}
		if err != nil {
			if ls.Decision != nil {
				_ = ls.Decision.Close()
			}
			c.Stop(ctx)
			_ = c.Wait()
			return nil, nil, exit.Wrap(RefuseSpawn, err, "the loopback proxy cannot serve the child's namespace")
		}
	}
	return c, stdout, nil
}

// readCommands feeds stdin lines to the engine until stdin ends, then
// tells it so: in ask mode no embedder can answer any more.
func (r *run) readCommands(eng *frame.Engine) {
	defer eng.StdinEnded()
	if r.io.Stdin == nil {
		return
	}
	// Blank lines too: they are numbered.
	kind.EachLine(r.io.Stdin, maxCommandLine, func(line []byte) { _ = eng.HandleLine(line) }, func() { eng.DropLongLine(maxCommandLine) })
}

// maxCommandLine bounds one stdin line: a frame.set carries a whole frame,
// which is never near this.
const maxCommandLine = 16 << 20

// resolver maps a call to its operations and subjects for the engine: the
// kind's own reading, except that on a run serving the default verbs those
// verbs, under the names the kind renders them, are read the way mcp-serve
// reads them (tool_invoke by the entry it names), so that the frame decides
// what the call behind tool_invoke does.
func (r *run) resolver() func(string, json.RawMessage) frame.Resolution {
	own := r.runner.Resolve(r.in.contract)
	if !r.d.Rules.DefaultVerbs(r.spec) {
		return own
	}
	surface := kind.DefaultSurface(r.spec)
	verbs := map[string]string{}
	for _, v := range mcpserve.Verbs() {
		verbs[r.d.CatalogueName(v)] = v
	}
	return func(tool string, input json.RawMessage) frame.Resolution {
		v, ok := verbs[tool]
		if !ok {
			return own(tool, input)
		}
		c := surface.Resolve(v, input)
		res := frame.Resolution{Subjects: c.Subjects, Catalogue: c.Catalogue}
		if c.Operation != "" {
			res.Operations = []frame.Operation{{Op: c.Operation}}
		}
		return res
	}
}
