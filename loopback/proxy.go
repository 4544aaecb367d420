// Package loopback is the credential-attaching loopback proxy and the egress
// gate (SPEC §6), each on a listener of its own bound to loopback: the model
// route, which only the vendor needs, and the gate, which the vendor's
// commands may use too. Apart, a port says which is which, and a child's
// commands can be let reach the one and not the other (the command sandbox's
// Landlock rules are by port).
//
// The child is given a per-run placeholder instead of the API key. Requests
// with a relative path reach the reverse endpoint (goproxy's non-proxy
// handler): one carrying the placeholder in x-api-key, x-goog-api-key,
// Authorization: Bearer or RunHeader is forwarded to the upstream with the
// real token swapped in, its answer streamed back chunk by chunk; anything
// else is answered 401 and never forwarded. Where the child holds its own
// key (Config.Credentials PassThrough) or none (NoCredential), RunHeader
// alone proves it, and its credential headers are passed on or taken out.
// With Config.AllowPaths only the model API's method and path are
// forwarded at all. CONNECT and absolute-URL requests are the egress gate:
// refused unless the host is on the run's allowlist (empty by default).
//
// With Config.ModelAPI the proxy also reads the model's answers as they
// stream through into its wire view (Wire): what the model said, for a run
// to check its record against.
//
// Config.Admit, when set, is asked once per connection to the model route
// whether its peer is the run's vendor: a request on a connection it does
// not admit is answered 403 and recorded (RefusedNotVendor), never forwarded,
// whatever credential it carries.
//
// Every request leaves one Record, handed to Config.OnRecord as it ends,
// and adds to the Counters. Neither, nor any log line, ever holds a body,
// the token or the placeholder.
package loopback

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"go.uber.org/zap"

	"github.com/metaharness/metaharness/exit"
)

// Proxy is one run's loopback proxy. Build it with New, serve with Start,
// stop with Close.
type Proxy struct {
	cfg         Config
	upstream    *url.URL
	listen      string
	allow       []egressRule
	paths       []pathRule
	placeholder []byte
	tokens      *tokens // nil unless the proxy attaches the token
	wire        *Wire   // nil without a model API
	begun       atomic.Uint64
	log         *zap.Logger
	tr          *http.Transport
	gate        *goproxy.ProxyHttpServer
	rec         *recorder

	srv     *http.Server // the model route: the reverse endpoint
	ln      net.Listener
	baseURL string
	gateSrv *http.Server // the egress gate: CONNECT and absolute URLs
	gateLn  net.Listener
	gateURL string
	serving sync.WaitGroup // one per listener served
	serveMu sync.Mutex     // Serve against Close
	closed  bool
	active  sync.WaitGroup // handlers and tunnels in flight

	tunnelMu sync.Mutex
	tunnels  map[*countingConn]struct{}

	closeOnce sync.Once
}

// New checks cfg and reads the token once. Every failure is an
// *exit.Refusal naming the field (as its CLI flag) and what to do instead.
func New(cfg Config) (*Proxy, error) {
	p := &Proxy{cfg: cfg, log: cfg.Logger, tunnels: map[*countingConn]struct{}{}}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	if cfg.Unix == "" {
		listen := cfg.Listen
		if listen == "" {
			listen = "127.0.0.1:0"
		}
		var err error
		if p.listen, err = parseListen(listen); err != nil {
			return nil, err
		}
	} else if cfg.Listen != "" {
		return nil, exit.Refuse(RefuseListenNotLoopback, "both --listen %s and --unix %s were given; choose one", cfg.Listen, cfg.Unix)
	}
	var err error
	if p.upstream, err = parseUpstream(cfg.Upstream); err != nil {
		return nil, err
	}
	switch cfg.Header {
	case "":
		p.cfg.Header = APIKeyHeader
	case APIKeyHeader, BearerHeader, GoogAPIKeyHeader:
	default:
		return nil, exit.Refuse(RefuseUpstreamAuthUnknown, "--upstream-auth %q is not one of x-api-key (Anthropic), bearer (OpenAI) and x-goog-api-key (Gemini)", cfg.Header)
	}
	if p.allow, err = parseEgress(cfg.AllowEgress); err != nil {
		return nil, err
	}
	if p.paths, err = parseAllowPaths(cfg.AllowPaths); err != nil {
		return nil, err
	}
	switch cfg.ModelAPI {
	case "":
	case AnthropicMessages, OpenAIResponses, GeminiAPI:
		limit := cfg.WireLimit
		if limit <= 0 {
			limit = DefaultWireLimit
		}
		p.wire = newWire(cfg.ModelAPI, limit)
	default:
		return nil, exit.Refuse(RefuseModelAPIUnknown, "--model-api %q is not one of %s (Claude Code), %s (Codex) and %s (Gemini CLI)", cfg.ModelAPI, AnthropicMessages, OpenAIResponses, GeminiAPI)
	}
	switch cfg.Credentials {
	case "", AttachToken:
		p.cfg.Credentials = AttachToken
		if p.tokens, err = newTokens(cfg.Token, cfg.LookupEnv); err != nil {
			return nil, err
		}
	case PassThrough, NoCredential:
		if given := cfg.Token.Given(); len(given) > 0 {
			what := "the child's own key goes upstream unchanged"
			if cfg.Credentials == NoCredential {
				what = "the child's key is taken out and none is attached"
			}
			return nil, exit.Refuse(RefuseTokenNotUsed, "%s was given, but under --child-key %s the proxy attaches no token (%s); give no token source, or attach the token (--child-key %s)",
				strings.Join(given, " and "), cfg.Credentials, what, AttachToken)
		}
	default:
		return nil, exit.Refuse(RefuseCredentialsUnknown, "--child-key %q is not one of %s (the child's key is the placeholder), %s (its own key goes upstream) and %s (nothing goes upstream)", cfg.Credentials, AttachToken, PassThrough, NoCredential)
	}
	ph, err := newPlaceholder(cfg.RunID)
	if err != nil {
		return nil, fmt.Errorf("making the run placeholder: %w", err)
	}
	p.placeholder = []byte(ph)
	if p.cfg.ShutdownGrace <= 0 {
		p.cfg.ShutdownGrace = 3 * time.Second
	}
	p.rec = &recorder{log: p.log, secret: p.secrets, on: cfg.OnRecord}
	p.tr = newTransport(cfg.RootCAs)
	p.gate = p.newGate()
	return p, nil
}

// newTransport dials the upstream: TLS verified against roots (nil: the
// system's), connections kept alive and reused, no proxy from the
// environment, bodies passed through undecoded.
func newTransport(roots *x509.CertPool) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   15 * time.Second,
		ForceAttemptHTTP2:     true,
		DisableCompression:    true,
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ReadBufferSize:        64 << 10,
		WriteBufferSize:       64 << 10,
	}
}

// Start binds the listeners (the model route's, and the egress gate's
// beside it on TCP) and serves them in the background.
func (p *Proxy) Start() error {
	var err error
	if p.cfg.Unix != "" {
		if _, statErr := os.Lstat(p.cfg.Unix); statErr == nil {
			return exit.Refuse(RefuseSocketPathTaken, "--unix %s already exists; a socket path is never reused or overwritten, name a new one", p.cfg.Unix)
		}
		p.ln, err = net.Listen("unix", p.cfg.Unix)
		if err == nil {
			err = os.Chmod(p.cfg.Unix, 0o600)
		}
		p.baseURL = "http://localhost"
	} else {
		p.ln, err = net.Listen("tcp", p.listen)
		if err == nil {
			p.baseURL = "http://" + p.ln.Addr().String()
			host, _, _ := net.SplitHostPort(p.ln.Addr().String())
			if p.gateLn, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err == nil {
				p.gateURL = "http://" + p.gateLn.Addr().String()
			}
		}
	}
	if err != nil {
		for _, ln := range []net.Listener{p.ln, p.gateLn} {
			if ln != nil {
				_ = ln.Close()
			}
		}
		return exit.Wrap(RefuseListenFailed, err, "the loopback proxy cannot listen on %s", p.where())
	}
	p.srv = p.newServer(p.serveModel, "http")
	p.srv.ConnContext = p.admission
	p.serveOn(p.srv, p.ln)
	if p.gateLn != nil {
		p.gateSrv = p.newServer(p.serveGate, "gate")
		p.serveOn(p.gateSrv, p.gateLn)
	}
	p.log.Info("loopback proxy listening", zap.String("base_url", p.baseURL), zap.String("gate_url", p.gateURL), zap.String("upstream", scrub(p.upstream.Redacted(), p.secrets())))
	return nil
}

func (p *Proxy) newServer(h http.HandlerFunc, name string) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(p.log.Named(name)),
	}
}

// serveOn serves ln with srv until Close.
func (p *Proxy) serveOn(srv *http.Server, ln net.Listener) {
	p.serving.Add(1)
	go func() {
		defer p.serving.Done()
		_ = srv.Serve(ln) // ends with ErrServerClosed at Close
	}()
}

// ServeModel serves ln as the model route too, and ServeGate serves ln as
// the egress gate, until Close: a listener the proxy did not open, such as
// one a confined child's init opened inside the child's network namespace
// (confine.Init.Listeners). Connections on it are the child's; the proxy
// still dials its upstream from its own namespace. ln is closed at Close,
// or at once when the proxy is already closed (or, for ServeGate, has no
// gate: on a unix socket).
func (p *Proxy) ServeModel(ln net.Listener) error { return p.serveMore(&p.srv, ln) }
func (p *Proxy) ServeGate(ln net.Listener) error  { return p.serveMore(&p.gateSrv, ln) }

func (p *Proxy) serveMore(srv **http.Server, ln net.Listener) error {
	p.serveMu.Lock()
	defer p.serveMu.Unlock()
	s := *srv
	if s == nil || p.closed {
		_ = ln.Close()
		return errors.New("the loopback proxy is not serving that route: serving comes after Start and before Close, and a proxy on a unix socket has no egress gate")
	}
	p.serveOn(s, ln)
	return nil
}

func (p *Proxy) where() string {
	if p.cfg.Unix != "" {
		return "unix socket " + p.cfg.Unix
	}
	return p.listen
}

// BaseURL is where a child reaches the reverse endpoint: http://127.0.0.1:PORT,
// or http://localhost on a unix socket (with SocketPath). Empty before Start.
func (p *Proxy) BaseURL() string { return p.baseURL }

// GateURL is where a child reaches the egress gate (http://127.0.0.1:PORT,
// another port than BaseURL's); empty before Start and on a unix socket.
func (p *Proxy) GateURL() string { return p.gateURL }

// SocketPath is the unix socket, or "" when listening on TCP.
func (p *Proxy) SocketPath() string { return p.cfg.Unix }

// Placeholder is the per-run value the child holds instead of the token. It
// is a credential to this proxy: hand it to the child, never log it.
func (p *Proxy) Placeholder() string { return string(p.placeholder) }

// Records is every request so far (the most recent 4096), oldest first. A
// request is recorded when its handler ends, which can be just after the
// client has its answer: read them after Close for a complete list.
func (p *Proxy) Records() []Record {
	r, _ := p.rec.snapshot()
	return r
}

// Counters sums every request so far.
func (p *Proxy) Counters() Counters {
	_, c := p.rec.snapshot()
	return c
}

// Wire is the proxy's view of what the model emitted, nil when the proxy
// was given no model API (Config.ModelAPI).
func (p *Proxy) Wire() *Wire { return p.wire }

// secrets is what records and logs are scrubbed of.
func (p *Proxy) secrets() []string {
	if p.tokens == nil {
		return []string{string(p.placeholder)}
	}
	return append(p.tokens.remembered(), string(p.placeholder))
}

// Credentials is what the proxy does with the child's credential
// (Config.Credentials, defaulted).
func (p *Proxy) Credentials() Credentials { return p.cfg.Credentials }

// ownCredential reports whether the child's credential headers are its
// own (PassThrough, NoCredential), so that only RunHeader proves it.
func (p *Proxy) ownCredential() bool {
	return p.cfg.Credentials == PassThrough || p.cfg.Credentials == NoCredential
}

// authorized reports whether h carries this run's placeholder, and why not.
// Every header that proves the child present must hold it: RunHeader, and
// when the proxy attaches the token, x-api-key, x-goog-api-key and
// Authorization too.
func (p *Proxy) authorized(h http.Header) (bool, string) {
	got := h.Values(RunHeader)
	if !p.ownCredential() {
		got = append(got, h.Values("X-Api-Key")...)
		got = append(got, h.Values("X-Goog-Api-Key")...)
		for _, a := range h.Values("Authorization") {
			if len(a) <= 7 || !strings.EqualFold(a[:7], "bearer ") {
				return false, RefusedWrongPlaceholder // another scheme, or none
			}
			got = append(got, a[7:])
		}
	}
	if len(got) == 0 {
		return false, RefusedNoPlaceholder
	}
	for _, g := range got {
		if subtle.ConstantTimeCompare([]byte(g), p.placeholder) != 1 {
			return false, RefusedWrongPlaceholder
		}
	}
	return true, ""
}

// Close stops the listener, lets requests in flight finish for up to
// ShutdownGrace, then cuts what is left (tunnels included) and waits, again
// bounded, for their goroutines. Records and Counters stay readable.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.serveMu.Lock()
		p.closed = true
		p.serveMu.Unlock()
		if p.srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownGrace)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, srv := range []*http.Server{p.srv, p.gateSrv} {
			if srv == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if errs[i] = srv.Shutdown(ctx); errs[i] != nil {
					errs[i] = srv.Close()
				}
			}()
		}
		wg.Wait()
		err = errors.Join(errs...)
		p.closeTunnels()
		p.serving.Wait()
		done := make(chan struct{})
		go func() { p.active.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(p.cfg.ShutdownGrace):
			err = errors.Join(err, errors.New("loopback proxy: requests still in flight after the shutdown grace"))
		}
		p.tr.CloseIdleConnections()
	})
	return err
}
