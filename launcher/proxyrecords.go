package launcher

import (
	"fmt"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// throttleEvent is the warning of a throttle the proxy begins to wait
// out. Its words carry no vendor phrase of a quota: the run goes on, and a
// fleet reading stdout for such words must not take it for one.
func throttleEvent(method, path string, retry int, th loopback.Throttle, budget time.Duration) *record.Warning {
	asked := "it named no wait, so the proxy backs off"
	if th.RetryAfter != "" {
		asked = "it asked for " + th.RetryAfter
	}
	return &record.Warning{Code: record.WarnLoopbackUpstreamThrottled, Message: fmt.Sprintf(
		"%s %s: the upstream answered %d (%s); the proxy waits %v and sends the request again (retry %d of at most %d, within --throttle-budget %v for one request)",
		method, path, th.Status, asked, th.Waited, retry, loopback.MaxThrottleRetries, budget)}
}

// proxyRecordEvent is the event a proxy record becomes in the stream. It
// never holds a body, a token or the placeholder: the record holds none.
func proxyRecordEvent(rec loopback.Record) *record.Warning {
	what := fmt.Sprintf("loopback request %d: %s %s", rec.Seq, rec.Method, rec.Path)
	facts := []string{fmt.Sprintf("answered %d", rec.Status)}
	if rec.UpstreamStatus != 0 {
		facts = append(facts, fmt.Sprintf("upstream %d", rec.UpstreamStatus))
	}
	facts = append(facts, fmt.Sprintf("%d bytes in, %d out, %d ms", rec.BytesIn, rec.BytesOut, rec.Duration.Milliseconds()))
	if n := len(rec.Throttled); n > 0 {
		var waited time.Duration
		for _, th := range rec.Throttled {
			waited += th.Waited
		}
		facts = append(facts, fmt.Sprintf("sent %d times: %d throttle(s) waited out, %v in all", n+1, n, waited))
	}
	if rec.Refresh != "" {
		facts = append(facts, "token refresh "+rec.Refresh)
	}
	if len(rec.Scrubbed) > 0 {
		facts = append(facts, "placeholder taken out of "+strings.Join(rec.Scrubbed, ", "))
	}
	if rec.Error != "" {
		facts = append(facts, rec.Error)
	}
	detail := strings.Join(facts, "; ")
	switch {
	case rec.Refused == loopback.RefusedNotVendor || rec.Refused == loopback.RefusedModelOnGate:
		// A model request that was not the vendor's own: one of its
		// commands asking the model for calls of its own (H13).
		return &record.Warning{Code: attest.ModelRequestNotVendor, Message: fmt.Sprintf("%s: refused (%s): the request was not the vendor's own, so the model never saw it and nothing it could have answered is on the wire; %s", what, rec.Refused, detail)}
	case rec.Route != loopback.RouteReverse && rec.Refused != "":
		// H12 reads "METHOD TARGET: reason".
		return &record.Warning{Code: attest.EgressRefused, Message: fmt.Sprintf("%s %s: %s", rec.Method, rec.Path, rec.Refused)}
	case rec.Refused != "":
		return &record.Warning{Code: record.WarnLoopbackRefused, Message: fmt.Sprintf("%s: refused (%s); %s; nothing was forwarded", what, rec.Refused, detail)}
	case rec.Quota != nil:
		return &record.Warning{Code: record.WarnLoopbackUpstreamQuota, Message: fmt.Sprintf("%s: the upstream answered %s; %s", what, loopback.QuotaPhrase(*rec.Quota), detail)}
	case upstreamFailed(rec):
		return &record.Warning{Code: record.WarnLoopbackUpstreamFailed, Message: what + ": " + detail}
	}
	return &record.Warning{Code: record.WarnLoopbackRequest, Message: what + ": " + detail}
}

func upstreamFailed(rec loopback.Record) bool {
	return rec.UpstreamStatus >= 500 ||
		strings.HasPrefix(rec.Error, loopback.ErrUpstreamUnreachable) ||
		strings.HasPrefix(rec.Error, loopback.ErrUpstreamReset)
}
