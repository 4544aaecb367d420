package launcher

import (
	"fmt"
	"sync"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

// WarnChannelRefused: the decision channel refused a request it could not
// take (too long, over its bounds, unreadable); the asker was denied.
const WarnChannelRefused = "DECISION_CHANNEL_REFUSED"

// channelNoted is how many refusals of one fault are written out one by
// one; the rest are counted, and the count is written at the wind-up, so
// that a child flooding the channel cannot flood the record.
const channelNoted = 3

// channelLog counts the decision channel's refusals by fault.
type channelLog struct {
	mu     sync.Mutex
	counts map[decide.Fault]int
	order  []decide.Fault
}

// channelRefused is the decision channel's Options.Refused.
func (r *run) channelRefused(f decide.Refusal) {
	l := &r.channel
	l.mu.Lock()
	if l.counts == nil {
		l.counts = map[decide.Fault]int{}
	}
	if l.counts[f.Fault] == 0 {
		l.order = append(l.order, f.Fault)
	}
	l.counts[f.Fault]++
	n := l.counts[f.Fault]
	l.mu.Unlock()
	if n > channelNoted {
		return
	}
	switch f.Fault {
	case decide.FaultNotVendor, decide.FaultToken:
		// Someone other than the vendor asked: a gap in H13, as a model
		// request that is not the vendor's is.
		r.emit(nil, &record.Warning{Code: attest.DecisionNotVendor, Message: fmt.Sprintf("the decision endpoint refused a request (%s): %s; it was not the vendor's, so nothing was decided and nothing ran", f.Fault, f.Detail)})
	default:
		r.emit(nil, &record.Warning{Code: WarnChannelRefused, Message: fmt.Sprintf("the decision channel refused a request (%s): %s; the asker was denied and nothing ran", f.Fault, f.Detail)})
	}
}

// channelSummary is the warning counting what channelRefused did not write
// out, nil when it wrote out everything.
func (r *run) channelSummary() *record.Warning {
	l := &r.channel
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := ""
	for _, f := range l.order {
		if n := l.counts[f]; n > channelNoted {
			msg += fmt.Sprintf("; %d refused as %s", n, f)
		}
	}
	if msg == "" {
		return nil
	}
	return &record.Warning{Code: WarnChannelRefused, Message: "the decision channel refused more requests than were written out one by one" + msg + "; each asker was denied and nothing ran"}
}
