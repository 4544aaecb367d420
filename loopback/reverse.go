package loopback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// maxHeld: a request body up to this size is held in memory so that an
// upstream 401 can be retried once with a fresh token; a larger one streams
// straight through and its 401 is relayed. Responses are never held.
const maxHeld = 4 << 20

// bufPool holds the copy buffers of response streams. 128 KiB: with 32 KiB
// the per-chunk syscalls (read, chunk framing, flush) held a 10 MiB stream
// to about half of direct throughput on loopback.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// hopByHop are the headers that belong to one connection (RFC 9110 §7.6.1),
// plus Proxy-Connection, which clients still send.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// connectionNamed is the set of headers a Connection header names (nil when none).
func connectionNamed(h http.Header) map[string]bool {
	var named map[string]bool
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if named == nil {
					named = map[string]bool{}
				}
				named[textproto.CanonicalMIMEHeaderKey(f)] = true
			}
		}
	}
	return named
}

// admissionKey keys a model-route connection's admission in its context.
type admissionKey struct{}

// admission is one model-route connection's answer from Config.Admit,
// asked at its first request.
type admission struct {
	local, remote net.Addr
	once          sync.Once
	err           error
}

// admission is the model route's ConnContext: it keeps the connection's
// addresses for Config.Admit.
func (p *Proxy) admission(ctx context.Context, c net.Conn) context.Context {
	if p.cfg.Admit == nil {
		return ctx
	}
	return context.WithValue(ctx, admissionKey{}, &admission{local: c.LocalAddr(), remote: c.RemoteAddr()})
}

// admitted is Config.Admit's answer for r's connection, nil without Admit.
func (p *Proxy) admitted(r *http.Request) error {
	if p.cfg.Admit == nil {
		return nil
	}
	a, ok := r.Context().Value(admissionKey{}).(*admission)
	if !ok {
		return errors.New("the connection's peer is unknown")
	}
	a.once.Do(func() { a.err = p.cfg.Admit(a.local, a.remote) })
	return a.err
}

// serveReverse is the reverse endpoint: goproxy's handler for requests with
// a relative path.
func (p *Proxy) serveReverse(w http.ResponseWriter, r *http.Request) {
	rec := p.rec.begin(RouteReverse, r.Method, r.URL.Path)
	defer p.rec.finish(rec) // also when the stream is aborted below
	order := p.begun.Add(1)

	if err := p.admitted(r); err != nil {
		rec.Refused, rec.Status, rec.Error = RefusedNotVendor, http.StatusForbidden, RefusedNotVendor+": "+err.Error()
		writeError(w, http.StatusForbidden, "permission_error", "metaharness_loopback_not_the_vendor",
			"metaharness loopback: this connection does not come from the run's vendor; it was not forwarded")
		return
	}
	if ok, why := p.authorized(r.Header); !ok {
		rec.Refused, rec.Status = why, http.StatusUnauthorized
		where := "x-api-key, x-goog-api-key or Authorization: Bearer"
		if p.ownCredential() {
			where = RunHeader
		}
		writeError(w, http.StatusUnauthorized, "authentication_error", "metaharness_loopback_unauthorized",
			"metaharness loopback: the request did not carry this run's placeholder in "+where+"; it was not forwarded")
		return
	}
	if why, msg := p.checkTarget(r.URL); why != "" {
		rec.Refused, rec.Status = why, http.StatusBadRequest
		writeError(w, http.StatusBadRequest, "invalid_request_error", "metaharness_loopback_bad_target", "metaharness loopback: "+msg+"; it was not forwarded")
		return
	}
	if !p.pathAllowed(r) {
		rec.Refused, rec.Status = RefusedPathNotAllowed, http.StatusForbidden
		writeError(w, http.StatusForbidden, "permission_error", "metaharness_loopback_path_not_allowed", scrub(fmt.Sprintf(
			"metaharness loopback: %s %s is not a request this run's model API takes (allowed: %s); it was not forwarded",
			r.Method, r.URL.EscapedPath(), p.allowedPaths()), p.secrets()))
		return
	}
	held, rest, err := holdBody(r)
	var sent atomic.Int64
	if err != nil {
		rec.Error, rec.Status = ErrRequestBody+": "+err.Error(), http.StatusBadRequest
		writeError(w, http.StatusBadRequest, "invalid_request_error", "metaharness_loopback_bad_request",
			"metaharness loopback: the request body could not be read; it was not forwarded")
		return
	}
	if rest != nil {
		rest = &countingReader{r: rest, n: &sent}
	} else {
		sent.Store(int64(len(held)))
	}
	rec.Scrubbed = p.scrubbedHeaders(r.Header)
	if bytes.Contains(held, p.placeholder) {
		// The child quoted its placeholder (a model that ran env, say): the
		// text is worthless upstream, and the value never leaves this machine.
		held = bytes.ReplaceAll(held, p.placeholder, []byte(redacted))
		rec.Scrubbed = append(rec.Scrubbed, "body")
	}

	var used string
	if p.tokens != nil {
		used = p.tokens.current()
	}
	resp, err := p.tr.RoundTrip(p.outbound(r, used, held, rest))
	if err == nil && resp.StatusCode == http.StatusUnauthorized && p.tokens != nil {
		resp, err = p.retryAfter401(r, rec, resp, used, held, rest != nil)
	}
	if err == nil {
		resp, err = p.waitOutThrottles(r, rec, resp, held, rest != nil)
	}
	rec.BytesIn = sent.Load()
	if err != nil {
		detail := errDetail(err)
		if r.Context().Err() != nil {
			rec.Error = ErrClientGone + ": " + detail
			return
		}
		rec.Error, rec.Status = ErrUpstreamUnreachable+": "+detail, http.StatusBadGateway
		p.log.Debug("upstream unreachable", zap.String("upstream", p.upstream.Host), zap.String("error", scrub(detail, p.secrets())))
		writeError(w, http.StatusBadGateway, "api_error", "metaharness_loopback_upstream_unreachable", scrub(fmt.Sprintf(
			"metaharness loopback: the upstream %s could not be reached (%s); nothing was answered by the model", p.upstream.Host, detail), p.secrets()))
		return
	}
	defer resp.Body.Close()
	ws := p.wire.begin(order, rec.Start, r.Method, scrub(r.URL.Path, p.secrets()), resp)
	ws.request(held)
	whole := false
	defer func() { ws.end(whole) }() // when the stream is aborted (a second end does nothing)
	rec.UpstreamStatus = resp.StatusCode
	copyResponseHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	rec.Status = resp.StatusCode
	rc := http.NewResponseController(w)
	if resp.ContentLength < 0 {
		_ = rc.Flush() // a stream: the client sees the status before the first event
	}
	sn := newSniffer(resp)
	if ws.readsEvents() {
		sn = nil // the view reads the error events itself: one pass over the stream
	}
	whole = p.stream(r, w, rc, resp.Body, rec, sn, ws)
	ws.end(whole)
	switch {
	case sn != nil:
		rec.Quota = sn.quota(resp.StatusCode, resp.Header)
	case ws.readsEvents():
		rec.Quota = ws.quota(resp.StatusCode, resp.Header)
	}
	rec.BytesIn = sent.Load()
}

// stream copies the upstream body to the client, flushing every chunk as it
// arrives, and shows each chunk to sn and ws (when not nil) after relaying
// it, so that neither is on the client's path. It reports whether the
// upstream's body ended whole. An upstream that breaks off mid-body aborts
// the client's connection too, so the client sees a cut stream rather than
// a clean end.
func (p *Proxy) stream(r *http.Request, w http.ResponseWriter, rc *http.ResponseController, body io.Reader, rec *Record, sn *sniffer, ws *wireStream) bool {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			ws.relay(n) // before the client can see it: Settle waits for it
			m, werr := w.Write(buf[:n])
			rec.BytesOut += int64(m)
			if werr == nil {
				werr = rc.Flush()
			}
			if sn != nil {
				sn.write(buf[:n])
			}
			ws.write(buf[:n])
			if werr != nil {
				rec.Error = ErrClientGone + ": " + werr.Error()
				return false
			}
		}
		switch {
		case rerr == nil:
		case errors.Is(rerr, io.EOF):
			return true
		case r.Context().Err() != nil:
			rec.Error = ErrClientGone + ": " + rerr.Error()
			return false
		default:
			rec.Error = ErrUpstreamReset + ": " + rerr.Error()
			panic(http.ErrAbortHandler)
		}
	}
}

// retryAfter401 re-reads the token after an upstream 401 and, if it
// changed, sends the request once more with the new one.
func (p *Proxy) retryAfter401(r *http.Request, rec *Record, resp *http.Response, used string, held []byte, streamed bool) (*http.Response, error) {
	if streamed {
		rec.Refresh = RefreshTooLarge
		return resp, nil
	}
	fresh, err := p.tokens.refresh(used)
	switch {
	case err != nil:
		rec.Refresh, rec.Error = RefreshFailed, ErrTokenReread+": "+err.Error()
		p.log.Warn("the token could not be re-read after an upstream 401; the 401 is relayed", zap.Error(err))
		return resp, nil
	case fresh == "":
		rec.Refresh = RefreshUnchanged
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	_ = resp.Body.Close()
	rec.Refresh = RefreshRetried
	return p.tr.RoundTrip(p.outbound(r, fresh, held, nil))
}

// holdBody reads the request body if it fits in maxHeld (rest nil), or
// returns it to be streamed (rest non-nil, held nil).
func holdBody(r *http.Request) (held []byte, rest io.Reader, err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil, nil
	}
	if r.ContentLength > maxHeld {
		return nil, r.Body, nil
	}
	if r.ContentLength > 0 {
		held = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, held)
		return held, nil, err
	}
	// Unknown length (chunked): hold it if it turns out small enough.
	var b bytes.Buffer
	n, err := b.ReadFrom(io.LimitReader(r.Body, maxHeld+1))
	if err != nil {
		return nil, nil, err
	}
	if n <= maxHeld {
		return b.Bytes(), nil, nil
	}
	return nil, io.MultiReader(&b, r.Body), nil
}

// outbound is the request to the upstream: same method, path (under the
// upstream's prefix), query and end-to-end headers; the token attached the
// way the upstream wants it; no client credential and no hop-by-hop header.
func (p *Proxy) outbound(r *http.Request, token string, held []byte, rest io.Reader) *http.Request {
	u := *p.upstream
	u.Path = p.upstream.Path + r.URL.Path
	if p.upstream.RawPath != "" || r.URL.RawPath != "" {
		u.RawPath = p.upstream.EscapedPath() + r.URL.EscapedPath()
	}
	u.RawQuery = r.URL.RawQuery
	out := &http.Request{
		Method: r.Method, URL: &u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, len(r.Header)),
	}
	if rest != nil {
		out.Body, out.ContentLength = io.NopCloser(rest), r.ContentLength
		if out.ContentLength == 0 {
			out.ContentLength = -1
		}
	} else if len(held) > 0 {
		out.ContentLength = int64(len(held))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(held)), nil }
		out.Body, _ = out.GetBody()
	}
	named := connectionNamed(r.Header)
	passed := p.cfg.Credentials == PassThrough
	for k, vs := range r.Header {
		// Expect was answered here, when the body was read.
		if hopByHop[k] || named[k] || k == RunHeader || credentialHeader(k) && !passed || k == "Expect" || p.carriesPlaceholder(vs) {
			continue
		}
		out.Header[k] = vs
	}
	switch {
	case p.tokens == nil: // the child's own credential, or none
	case p.cfg.Header == BearerHeader:
		out.Header.Set("Authorization", "Bearer "+token)
	case p.cfg.Header == GoogAPIKeyHeader:
		out.Header.Set("X-Goog-Api-Key", token)
	default:
		out.Header.Set("X-Api-Key", token)
	}
	if p.wire != nil {
		out.Header.Set("Accept-Encoding", "identity") // the view reads what it relays
	}
	return out.WithContext(r.Context())
}

func credentialHeader(k string) bool {
	return k == "Authorization" || k == "X-Api-Key" || k == "X-Goog-Api-Key"
}

// pathAllowed reports whether r is on the allowlist (an empty one allows
// every path). The path is compared as it goes upstream, escaped, so that
// an encoding of an allowed path is not taken for it.
func (p *Proxy) pathAllowed(r *http.Request) bool {
	if len(p.paths) == 0 {
		return true
	}
	ep := r.URL.EscapedPath()
	for _, rule := range p.paths {
		if r.Method == rule.method && rule.matches(ep) {
			return true
		}
	}
	return false
}

// allowedPaths spells the allowlist for a refusal.
func (p *Proxy) allowedPaths() string {
	var out []string
	for _, rule := range p.paths {
		out = append(out, rule.method+" "+rule.path)
	}
	return strings.Join(out, ", ")
}

// carriesPlaceholder catches the placeholder smuggled in another header
// (a custom header, say): it must never reach the upstream.
func (p *Proxy) carriesPlaceholder(vs []string) bool {
	for _, v := range vs {
		if p.holdsPlaceholder(v) {
			return true
		}
	}
	return false
}

// scrubbedHeaders names, sorted, the headers outbound drops because they
// carry the placeholder where the child was not meant to put it, for the
// record.
func (p *Proxy) scrubbedHeaders(h http.Header) []string {
	var out []string
	for k, vs := range h {
		meant := k == RunHeader || credentialHeader(k) && !p.ownCredential()
		if !meant && p.carriesPlaceholder(vs) {
			out = append(out, "header "+k)
		}
	}
	sort.Strings(out)
	return out
}

// holdsPlaceholder reports whether s carries the placeholder, as is or
// percent-encoded.
func (p *Proxy) holdsPlaceholder(s string) bool {
	ph := string(p.placeholder)
	if strings.Contains(s, ph) {
		return true
	}
	if u, err := url.QueryUnescape(s); err == nil && strings.Contains(u, ph) {
		return true
	}
	u, err := url.PathUnescape(s)
	return err == nil && strings.Contains(u, ph)
}

// checkTarget refuses what the reverse endpoint must not forward, and says
// why: a dot segment in the path (hasDotSegment), which could climb out of
// the upstream's path prefix with the real token attached; the
// placeholder anywhere in the path or query; and a key in the query (the
// Gemini API's key=…), where a credential would travel in a URL.
func (p *Proxy) checkTarget(u *url.URL) (refused, msg string) {
	if hasDotSegment(u.Path) {
		return RefusedPathDotSegment, "the request path has a . or .. segment (however encoded, or with a ;parameter), which could leave the upstream's path prefix"
	}
	if p.holdsPlaceholder(u.Path) || p.holdsPlaceholder(u.RawPath) || p.holdsPlaceholder(u.RawQuery) {
		return RefusedPlaceholderInURL, "the request's path or query carries this run's placeholder, which never leaves this machine"
	}
	if keyInQuery(u.RawQuery) {
		return RefusedKeyInQuery, "the request's query carries a key parameter, and a credential never travels in a URL (send it in a header)"
	}
	return "", ""
}

// keyInQuery reports whether a query names a key parameter, in any case
// or encoding of its name.
func keyInQuery(raw string) bool {
	for _, kv := range strings.FieldsFunc(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, _ := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if strings.EqualFold(strings.TrimSpace(name), "key") {
			return true
		}
	}
	return false
}

// maxDecodes bounds how often hasDotSegment percent-decodes a path.
const maxDecodes = 4

// hasDotSegment reports whether a path (already decoded once, as
// url.URL.Path is) has a "." or ".." segment as some server behind the
// upstream could read it: percent-decoded again and again (%252e%252e),
// with a backslash taken for a separator, or with a ;parameter after the
// dots (..;x, as servlet containers read it). A path still encoded after
// maxDecodes rounds counts as one too: nothing the model APIs take is.
func hasDotSegment(path string) bool {
	for round := 0; ; round++ {
		for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
			if name, _, _ := strings.Cut(seg, ";"); name == "." || name == ".." {
				return true
			}
		}
		next, changed := percentDecode(path)
		if !changed {
			return false
		}
		if round == maxDecodes {
			return true
		}
		path = next
	}
}

// percentDecode decodes each well-formed %XX of s, leaving anything else
// as it is, and reports whether it decoded one.
func percentDecode(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			changed = true
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), changed
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func copyResponseHeader(dst, src http.Header) {
	named := connectionNamed(src)
	for k, vs := range src {
		if hopByHop[k] || named[k] {
			continue
		}
		dst[k] = vs
	}
}

// writeError answers in a shape both vendors' clients read: Anthropic's
// {"type":"error","error":{"type","message"}} with OpenAI's error.code.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errDetail is a transport error without the URL it was dialling.
func errDetail(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// countingReader counts the bytes read through it (read concurrently by the
// transport, hence atomic).
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
