package loopback

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"go.uber.org/zap"

	"github.com/metaharness/metaharness/internal/loopbackhost"
)

// newGate builds the goproxy server behind the gate's listener: the
// allowlist on CONNECT and on absolute-URL requests, a refusal for anything
// meant for the model route (goproxy's non-proxy handler), and our
// verifying transport in place of goproxy's default (which skips TLS
// verification and follows the environment's proxy).
func (p *Proxy) newGate() *goproxy.ProxyHttpServer {
	g := goproxy.NewProxyHttpServer()
	g.Logger = gateLogger{p}
	g.Tr = p.tr
	g.ConnectDial = nil // goproxy's default follows HTTPS_PROXY from our environment
	g.ConnectDialWithReq = p.dialTunnel
	g.KeepAcceptEncoding = true
	g.NonproxyHandler = http.HandlerFunc(p.refuseOffRoute)
	g.OnRequest().HandleConnectFunc(p.gateConnect)
	g.OnRequest().DoFunc(p.gateForward)
	g.OnResponse().DoFunc(p.forwardDone)
	return g
}

// serveGate counts the request in flight (Close waits for it) and hands it
// to goproxy.
func (p *Proxy) serveGate(w http.ResponseWriter, r *http.Request) {
	p.active.Add(1)
	defer p.active.Done()
	p.gate.ServeHTTP(w, r)
}

// serveModel counts the request in flight and hands a relative-path one to
// the reverse endpoint; a proxy request (CONNECT, an absolute URL) is for
// the gate, on its own listener.
func (p *Proxy) serveModel(w http.ResponseWriter, r *http.Request) {
	p.active.Add(1)
	defer p.active.Done()
	if r.Method == http.MethodConnect || r.URL.IsAbs() {
		p.refuseOffRoute(w, r)
		return
	}
	p.serveReverse(w, r)
}

// refuseOffRoute answers a request that came to the other route's
// listener: 421 (the request is for another server), recorded, never
// forwarded. A model request on the gate's port is one the vendor never
// makes (its base URL names the model route), and one its commands, which
// may reach the gate, must not.
func (p *Proxy) refuseOffRoute(w http.ResponseWriter, r *http.Request) {
	route, why, msg := RouteReverse, RefusedModelOnGate, "the model route is not served on the egress gate's port"
	if r.Method == http.MethodConnect || r.URL.IsAbs() {
		route, why, msg = RouteForward, RefusedEgressOnModelRoute, "egress goes through the egress gate (HTTPS_PROXY), not the model route"
		if r.Method == http.MethodConnect {
			route = RouteConnect
		}
	}
	rec := p.rec.begin(route, r.Method, r.URL.Host+r.URL.Path)
	rec.Refused, rec.Status = why, http.StatusMisdirectedRequest
	p.rec.finish(rec)
	writeError(w, http.StatusMisdirectedRequest, "invalid_request_error", "metaharness_loopback_wrong_route", "metaharness loopback: "+msg+"; it was not forwarded")
}

func (p *Proxy) egressAllowed(host, port string) bool {
	for _, rule := range p.allow {
		if rule.allows(host, port) {
			return true
		}
	}
	return false
}

// splitTarget splits host[:port], giving port def when none is named.
func splitTarget(target, def string) (host, port string) {
	if h, p, err := net.SplitHostPort(target); err == nil {
		return h, p
	}
	return target, def
}

func refusal(host, why string) string {
	return fmt.Sprintf("metaharness loopback: egress to %s refused: %s; this run's allowlist (--allow-egress) does not carry it\n", host, why)
}

// gateConnect decides a CONNECT: an allowlisted host is tunnelled (see
// dialTunnel); anything else is answered 403 and recorded.
func (p *Proxy) gateConnect(target string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	host, port := splitTarget(target, "80") // goproxy dials :80 when no port is named
	if p.egressAllowed(host, port) {
		return goproxy.OkConnect, target
	}
	rec := p.rec.begin(RouteConnect, http.MethodConnect, target)
	rec.Refused, rec.Status = RefusedEgress, http.StatusForbidden
	p.rec.finish(rec)
	ctx.Resp = goproxy.NewResponse(ctx.Req, goproxy.ContentTypeText, http.StatusForbidden, refusal(target, "the host is not allowed"))
	return goproxy.RejectConnect, target
}

// gateForward decides an absolute-URL request: refused unless allowlisted,
// and refused over plain http to a host that is not loopback.
func (p *Proxy) gateForward(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	rec := p.rec.begin(RouteForward, r.Method, r.URL.Host+r.URL.Path)
	def := "80"
	if r.URL.Scheme == "https" {
		def = "443"
	}
	host, port := splitTarget(r.URL.Host, def)
	switch {
	case !p.egressAllowed(host, port):
		rec.Refused = RefusedEgress
	case r.URL.Scheme != "https" && !loopbackhost.Is(host):
		rec.Refused = RefusedEgressPlainHTTP
	}
	if rec.Refused != "" {
		rec.Status = http.StatusForbidden
		p.rec.finish(rec)
		why := "the host is not allowed"
		if rec.Refused == RefusedEgressPlainHTTP {
			why = "plain http off loopback; use https (CONNECT)"
		}
		return r, goproxy.NewResponse(r, goproxy.ContentTypeText, http.StatusForbidden, refusal(r.URL.Host, why))
	}
	var sent atomic.Int64
	if r.Body != nil {
		r.Body = readCloser{Reader: &countingReader{r: r.Body, n: &sent}, Closer: r.Body}
	}
	ctx.UserData = &forwarded{rec: rec, sent: &sent}
	return r, nil
}

// forwarded is an allowed absolute-URL request on its way.
type forwarded struct {
	rec  *Record
	sent *atomic.Int64
}

// forwardDone records an allowed absolute-URL request once goproxy has
// copied (and closed) the response body.
func (p *Proxy) forwardDone(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	f, ok := ctx.UserData.(*forwarded)
	if !ok {
		return resp // a refusal, recorded already
	}
	if resp == nil {
		f.rec.Error, f.rec.Status = ErrEgressDial+": "+errDetail(ctx.Error), http.StatusInternalServerError
		f.rec.BytesIn = f.sent.Load()
		p.rec.finish(f.rec)
		return nil
	}
	f.rec.UpstreamStatus, f.rec.Status = resp.StatusCode, resp.StatusCode
	resp.Body = &recordedBody{ReadCloser: resp.Body, onClose: func(n int64) {
		f.rec.BytesIn, f.rec.BytesOut = f.sent.Load(), n
		p.rec.finish(f.rec)
	}}
	return resp
}

type readCloser struct {
	io.Reader
	io.Closer
}

// recordedBody counts a response body and reports once when it is closed.
type recordedBody struct {
	io.ReadCloser
	n       int64
	once    sync.Once
	onClose func(n int64)
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *recordedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.onClose(b.n) })
	return err
}

// dialTunnel dials an allowlisted CONNECT target (never through another
// proxy) and returns a conn that counts both ways and records on close.
func (p *Proxy) dialTunnel(req *http.Request, network, addr string) (net.Conn, error) {
	rec := p.rec.begin(RouteConnect, http.MethodConnect, addr)
	d := net.Dialer{Timeout: 30 * time.Second}
	c, err := d.DialContext(req.Context(), network, addr)
	if err != nil {
		rec.Error, rec.Status = ErrEgressDial+": "+err.Error(), http.StatusBadGateway
		p.rec.finish(rec)
		return nil, err
	}
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		rec.Error, rec.Status = ErrEgressDial+": not a TCP connection", http.StatusBadGateway
		p.rec.finish(rec)
		return nil, fmt.Errorf("egress to %s: %s is not a TCP network", addr, network)
	}
	p.tunnelMu.Lock()
	defer p.tunnelMu.Unlock()
	if p.tunnels == nil { // Close has begun: no new tunnel may outlive it
		_ = c.Close()
		rec.Error, rec.Status = ErrEgressDial+": the proxy is closing", http.StatusBadGateway
		p.rec.finish(rec)
		return nil, fmt.Errorf("egress to %s: the loopback proxy is closing", addr)
	}
	rec.Status = http.StatusOK
	cc := &countingConn{Conn: c, tcp: tcp, p: p, rec: rec}
	p.active.Add(1)
	p.tunnels[cc] = struct{}{}
	return cc, nil
}

// closeTunnels closes every open tunnel and refuses new ones.
func (p *Proxy) closeTunnels() {
	p.tunnelMu.Lock()
	open := make([]*countingConn, 0, len(p.tunnels))
	for c := range p.tunnels {
		open = append(open, c)
	}
	p.tunnels = nil
	p.tunnelMu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// countingConn is the target side of a tunnel. It embeds net.Conn, not
// *net.TCPConn, so that io.Copy cannot bypass the counts through
// ReadFrom/WriteTo; CloseRead/CloseWrite keep goproxy's half-close path.
type countingConn struct {
	net.Conn
	tcp     *net.TCPConn
	p       *Proxy
	rec     *Record
	in, out atomic.Int64
	once    sync.Once
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.out.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) CloseRead() error  { return c.tcp.CloseRead() }
func (c *countingConn) CloseWrite() error { return c.tcp.CloseWrite() }

func (c *countingConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.rec.BytesIn, c.rec.BytesOut = c.in.Load(), c.out.Load()
		c.p.rec.finish(c.rec)
		c.p.tunnelMu.Lock()
		delete(c.p.tunnels, c) // a no-op once Close has dropped the set
		c.p.tunnelMu.Unlock()
		c.p.active.Done()
	})
	return err
}

// gateLogger sends goproxy's messages to our logger at debug level, scrubbed.
type gateLogger struct{ p *Proxy }

func (g gateLogger) Printf(format string, v ...any) {
	if ce := g.p.log.Check(zap.DebugLevel, "egress gate"); ce != nil {
		ce.Write(zap.String("detail", scrub(fmt.Sprintf(format, v...), g.p.secrets())))
	}
}
