package record

import (
	"time"
)

// The loopback proxy's records as the attestation and the run summary
// carry them: data only, so that the documents need not know the proxy
// (loopback aliases these as Record, Counters, Quota and Route). Nothing
// here imports net/http: the early entry links this package, and must
// initialise before the heavy libraries do (internal/earlyentry).

// ProxyRoute is which face of the listener a request came through.
type ProxyRoute string

// ProxyRecord is one request through the loopback proxy's listener. It
// never holds a body, a token or a placeholder: strings that could echo one
// are scrubbed.
type ProxyRecord struct {
	Seq    uint64     `json:"seq"`
	Start  time.Time  `json:"start"`
	Route  ProxyRoute `json:"route"`
	Method string     `json:"method"`
	// Path is the URL path (no query) on the reverse route, the target
	// host:port on CONNECT, and host + path on an absolute-URL request.
	Path string `json:"path"`
	// Status is what the client was answered (0: nothing was).
	Status int `json:"status"`
	// UpstreamStatus is what the upstream answered (0: nothing did).
	UpstreamStatus int `json:"upstream_status"`
	// BytesIn counts body bytes from the client, BytesOut body bytes to it
	// (on a tunnel: bytes each way through it).
	BytesIn  int64         `json:"bytes_in"`
	BytesOut int64         `json:"bytes_out"`
	Duration time.Duration `json:"duration_ns"`
	Refused  string        `json:"refused,omitempty"`
	Refresh  string        `json:"refresh,omitempty"`
	Error    string        `json:"error,omitempty"`
	// Scrubbed names where the placeholder was taken out of a forwarded
	// request ("header X-Name", "body"), never what it was.
	Scrubbed []string `json:"scrubbed,omitempty"`
	// Quota is set when the upstream's answer said the account will not be
	// served now (a 429, a rate_limit_error, an insufficient_quota).
	Quota *Quota `json:"quota,omitempty"`
	// Throttled are the upstream's throttles the proxy waited out before it
	// sent the request again, one per retry, in order; the answer recorded
	// is the last one's.
	Throttled []Throttle `json:"throttled,omitempty"`
}

// Throttle is one 429 the loopback proxy waited out and retried: a brief
// rate limit within the run's throttle budget, not yet a usage limit.
type Throttle struct {
	// Status is the HTTP status (429).
	Status int `json:"status"`
	// Type is the vendor's error type or code when it is one of the quota
	// types (rate_limit_error, rate_limit_exceeded); empty when none.
	Type string `json:"type,omitempty"`
	// RetryAfter is the wait the upstream asked for, as it gave it
	// (Retry-After or retry-after-ms), when it gave one in a shape HTTP
	// allows; empty when the proxy chose the wait itself.
	RetryAfter string `json:"retry_after,omitempty"`
	// Waited is how long the proxy waited before the retry.
	Waited time.Duration `json:"waited_ns"`
}

// ProxyCounters sum the proxy's records, all of them (the record list itself is bounded).
type ProxyCounters struct {
	Requests        uint64 `json:"requests"`
	Forwarded       uint64 `json:"forwarded"` // reverse requests sent upstream
	RefusedAuth     uint64 `json:"refused_auth"`
	RefusedEgress   uint64 `json:"refused_egress"`
	RefusedRequest  uint64 `json:"refused_request"` // a path or query refused before forwarding, or a path not allowed
	EgressAllowed   uint64 `json:"egress_allowed"`
	RefreshRetried  uint64 `json:"refresh_and_retry"`
	RefreshFailed   uint64 `json:"refresh_failed"`
	UpstreamErrors  uint64 `json:"upstream_errors"`
	ClientGone      uint64 `json:"client_gone"`
	BytesIn         uint64 `json:"bytes_in"`
	BytesOut        uint64 `json:"bytes_out"`
	RecordsDropped  uint64 `json:"records_dropped"`
	UpstreamStatus4 uint64 `json:"upstream_4xx"`
	UpstreamStatus5 uint64 `json:"upstream_5xx"`
	// UpstreamQuota counts the answers that were quota errors (Record.Quota).
	UpstreamQuota uint64 `json:"upstream_quota"`
	// ThrottleRetries counts the requests sent again after a throttle
	// (Record.Throttled).
	ThrottleRetries uint64 `json:"throttle_retries"`
}

// Quota is an upstream's answer that the account will not be served now:
// an HTTP 429, or an error whose type or code is one of loopback.QuotaTypes, in a
// plain error answer or as an error event inside a 200 event stream. A
// fleet acts on it (cools the account down, moves to the next one); a run
// stops on it instead of sitting through the vendor's own retries.
type Quota struct {
	// Status is the HTTP status the answer came with (200 for an error
	// event inside a stream).
	Status int `json:"status"`
	// Type is the vendor's error type or code when it is one of
	// QuotaTypes; empty when a 429 named none of them.
	Type string `json:"type,omitempty"`
	// InStream: the error came as an event of a 200 event stream.
	InStream bool `json:"in_stream,omitempty"`
	// RetryAfter is the upstream's Retry-After header when it held a number
	// of seconds or an HTTP date; empty otherwise.
	RetryAfter string `json:"retry_after,omitempty"`
}

// Warning codes for the loopback proxy's records, one event per request as
// it ends (the egress gate's refusals are attest.EgressRefused, which H12 lists).
const (
	// WarnLoopbackRequest: a request the proxy relayed, with what the
	// upstream answered.
	WarnLoopbackRequest = "LOOPBACK_REQUEST"
	// WarnLoopbackRefused: a request the reverse endpoint refused (no or a
	// wrong placeholder, a path or query it never forwards).
	WarnLoopbackRefused = "LOOPBACK_REFUSED"
	// WarnLoopbackUpstreamFailed: the upstream could not be reached (the
	// child was answered 502), broke off mid-answer, or answered 5xx.
	WarnLoopbackUpstreamFailed = "LOOPBACK_UPSTREAM_FAILED"
	// WarnLoopbackUpstreamQuota: the upstream answered that the account is
	// out of quota or rate-limited (loopback.Quota); the run stops on it.
	WarnLoopbackUpstreamQuota = "LOOPBACK_UPSTREAM_QUOTA"
	// WarnLoopbackUpstreamThrottled: the upstream asked the request to
	// wait (a 429 within the throttle budget); the proxy waits it out and
	// sends the request again.
	WarnLoopbackUpstreamThrottled = "LOOPBACK_UPSTREAM_THROTTLED"
)
