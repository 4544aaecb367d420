package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/decidehttp"
	"github.com/metaharness/metaharness/launcher/kind"
)

// endpoint is the run's decision endpoint for a kind whose vendor posts
// its hook itself (kind.HookEndpoint, internal/decidehttp): no process per
// call.
type endpoint struct {
	hook kind.HookEndpoint
	// host listens on the host's loopback from the set-up on: it names the
	// endpoint's port before the plan is written, and serves it where the
	// child has no network namespace of its own. Where it has one, the
	// init listens on the same port inside, and host is closed unserved:
	// no process outside the child can reach the endpoint there either.
	host  net.Listener
	token string
	admit func(local, remote net.Addr) error
}

// openEndpoint opens the run's decision endpoint, when the kind's vendor
// posts its hook itself, into the world the plan reads: its address and
// the run's token, 32 random bytes that only the vendor is given.
func (r *run) openEndpoint(w *kind.World) error {
	h, ok := r.kind.(kind.HookEndpoint)
	if !ok {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return exit.Wrap(RefuseDecisionSocket, err, "the decision endpoint cannot listen on the host's loopback")
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand never fails on Linux
	r.endpoint = &endpoint{hook: h, host: ln, token: hex.EncodeToString(secret), admit: r.admit()}
	if r.tel.run != nil {
		r.tel.run.Secrets(r.endpoint.token)
	}
	w.DecisionAddr, w.DecisionToken = ln.Addr().String(), r.endpoint.token
	r.happened = append(r.happened, "the decision endpoint was opened")
	return nil
}

// serveEndpoint serves the decision endpoint once the child runs: on the
// listener its init opened inside its network namespace, else on the
// host's. The returned func stops it and waits for the answers in flight.
func (r *run) serveEndpoint(svc *services, c *child) func() {
	e := r.endpoint
	if e == nil {
		return func() {}
	}
	ln := e.host
	if inside := c.Listeners().Decision; inside != nil {
		_ = e.host.Close()
		ln = inside
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = decidehttp.Serve(ctx, ln, decidehttp.Endpoint{
			Token: e.token, Admit: e.admit,
			Read: e.hook.HookRequest, Write: e.hook.HookAnswer,
			Answer: svc.answerer(), Refused: r.channelRefused,
		})
	}()
	return func() { stop(); <-served }
}

// close closes the host's listener of an endpoint never served (the run
// refused before its spawn).
func (e *endpoint) close() {
	if e != nil {
		_ = e.host.Close()
	}
}
