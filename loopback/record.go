package loopback

import (
	"strings"
	"sync"
	"time"

	"github.com/metaharness/metaharness/record"
	"go.uber.org/zap"
)

// Route, Record and Counters are the proxy's records as data (package
// record), which the attestation carries.
type (
	Route    = record.ProxyRoute
	Record   = record.ProxyRecord
	Counters = record.ProxyCounters
)

const (
	// RouteReverse: a relative-path request to the reverse endpoint.
	RouteReverse Route = "reverse"
	// RouteConnect: a CONNECT to the egress gate.
	RouteConnect Route = "connect"
	// RouteForward: an absolute-URL request to the egress gate.
	RouteForward Route = "forward"
)

// Refusal reasons a Record carries.
const (
	RefusedNoPlaceholder    = "no-placeholder"    // no x-api-key, x-goog-api-key, Authorization: Bearer or RunHeader (under PassThrough and NoCredential: no RunHeader)
	RefusedWrongPlaceholder = "wrong-placeholder" // a credential that is not this run's placeholder
	RefusedEgress           = "egress-not-allowed"
	RefusedEgressPlainHTTP  = "egress-plain-http" // an allowed host, but over http to a non-loopback host
	// RefusedPathDotSegment: a "." or ".." path segment (however
	// encoded), which could climb out of the upstream's path prefix.
	RefusedPathDotSegment = "path-dot-segment"
	// RefusedPlaceholderInURL: the placeholder in the path or query, which
	// is never forwarded.
	RefusedPlaceholderInURL = "placeholder-in-url"
	// RefusedKeyInQuery: a key parameter in the query (the Gemini API
	// takes key=…), which is never forwarded: a credential goes in a
	// header.
	RefusedKeyInQuery = "key-in-query"
	// RefusedPathNotAllowed: a method and path not on the allowlist
	// (Config.AllowPaths): the token goes only where the model API is.
	RefusedPathNotAllowed = "path-not-allowed"
	// RefusedNotVendor: a request on a model-route connection whose peer
	// is not the run's vendor (Config.Admit): one of its commands, say.
	RefusedNotVendor = "not-the-vendor"
	// RefusedModelOnGate and RefusedEgressOnModelRoute: a request that came
	// to the other route's listener.
	RefusedModelOnGate        = "model-request-on-gate"
	RefusedEgressOnModelRoute = "egress-on-model-route"
)

// Errors a Record carries (the code, then ": " and a scrubbed detail).
const (
	ErrUpstreamUnreachable = "upstream-unreachable"
	ErrUpstreamReset       = "upstream-reset" // the upstream broke off mid-body
	ErrClientGone          = "client-gone"    // the client went away before the end
	ErrRequestBody         = "request-body-unreadable"
	ErrTokenReread         = "token-reread-failed"
	ErrEgressDial          = "egress-dial-failed"
)

// Refresh outcomes after an upstream 401.
const (
	RefreshRetried   = "retried"   // the token had changed: retried once with it
	RefreshUnchanged = "unchanged" // the same token: the 401 was relayed
	RefreshFailed    = "failed"    // the source could not be re-read: the 401 was relayed
	RefreshTooLarge  = "body-too-large-to-retry"
)

// maxRecords bounds the records kept; older ones are dropped and counted.
const maxRecords = 4096

// recorder keeps the records and counters.
type recorder struct {
	log    *zap.Logger
	secret func() []string // values to scrub
	on     func(Record)    // Config.OnRecord, or nil

	mu       sync.Mutex
	seq      uint64
	records  []Record
	oldest   int // index of the oldest record once the ring is full
	counters Counters
}

func (rc *recorder) begin(route Route, method, path string) *Record {
	return &Record{Start: time.Now(), Route: route, Method: method, Path: path}
}

// finish completes r, counts it and keeps it.
func (rc *recorder) finish(r *Record) {
	r.Duration = time.Since(r.Start)
	secrets := rc.secret()
	r.Path = scrub(r.Path, secrets)
	r.Error = scrub(r.Error, secrets)

	rc.mu.Lock()
	rc.seq++
	r.Seq = rc.seq
	c := &rc.counters
	c.Requests++
	c.BytesIn += uint64(r.BytesIn)
	c.BytesOut += uint64(r.BytesOut)
	switch {
	case r.Refused == RefusedNoPlaceholder || r.Refused == RefusedWrongPlaceholder:
		c.RefusedAuth++
	case r.Refused == RefusedPathDotSegment || r.Refused == RefusedPlaceholderInURL || r.Refused == RefusedPathNotAllowed,
		r.Refused == RefusedNotVendor, r.Refused == RefusedModelOnGate, r.Refused == RefusedEgressOnModelRoute:
		c.RefusedRequest++
	case r.Refused != "":
		c.RefusedEgress++
	case r.Route == RouteReverse && r.UpstreamStatus != 0:
		c.Forwarded++
	case r.Route != RouteReverse:
		c.EgressAllowed++
	}
	switch r.Refresh {
	case RefreshRetried:
		c.RefreshRetried++
	case RefreshUnchanged, RefreshFailed, RefreshTooLarge:
		c.RefreshFailed++
	}
	switch {
	case strings.HasPrefix(r.Error, ErrUpstreamUnreachable), strings.HasPrefix(r.Error, ErrUpstreamReset):
		c.UpstreamErrors++
	case strings.HasPrefix(r.Error, ErrClientGone):
		c.ClientGone++
	}
	if r.Quota != nil {
		c.UpstreamQuota++
	}
	c.ThrottleRetries += uint64(len(r.Throttled))
	switch r.UpstreamStatus / 100 {
	case 4:
		c.UpstreamStatus4++
	case 5:
		c.UpstreamStatus5++
	}
	if len(rc.records) < maxRecords {
		rc.records = append(rc.records, *r)
	} else { // a ring: overwrite the oldest
		rc.records[rc.oldest] = *r
		rc.oldest = (rc.oldest + 1) % maxRecords
		c.RecordsDropped++
	}
	rc.mu.Unlock()
	if rc.on != nil {
		rc.on(*r)
	}

	if ce := rc.log.Check(zap.DebugLevel, "loopback request"); ce != nil {
		ce.Write(zap.Uint64("seq", r.Seq), zap.String("route", string(r.Route)), zap.String("method", r.Method),
			zap.String("path", r.Path), zap.Int("status", r.Status), zap.Int("upstream_status", r.UpstreamStatus),
			zap.Int64("bytes_in", r.BytesIn), zap.Int64("bytes_out", r.BytesOut), zap.Duration("duration", r.Duration),
			zap.String("refused", r.Refused), zap.String("refresh", r.Refresh), zap.String("error", r.Error))
	}
}

func (rc *recorder) snapshot() ([]Record, Counters) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]Record, 0, len(rc.records))
	out = append(out, rc.records[rc.oldest:]...)
	out = append(out, rc.records[:rc.oldest]...)
	return out, rc.counters
}

// redacted stands in for a secret taken out of a string or a body.
const redacted = "[redacted]"

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return s
}
