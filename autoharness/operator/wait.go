package operator

import (
	"context"
	"time"

	"github.com/metaharness/metaharness/autoharness"
)

// Clock is the time a wait runs in: the system's (System), or a test's.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (its error then).
	Sleep(ctx context.Context, d time.Duration) error
}

// System is the system's clock.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PollInterval is how often a wait reads its session.
const PollInterval = 2 * time.Second

// Terminal reports whether status is one a session ends in.
func Terminal(status string) bool {
	switch status {
	case "completed", "failed", "cancelled", "timed_out":
		return true
	}
	return false
}

// Succeeded reports whether s completed with exit code 0, the one end a
// wait counts as success.
func Succeeded(s *autoharness.Session) bool {
	return s.Status == "completed" && s.ExitCode != nil && *s.ExitCode == 0
}

// Wait reads session id at once and then every PollInterval until it is in
// a terminal status or budget has passed, and returns the last record read
// and whether it is terminal. seen is called with every record read; an
// error of its own ends the wait with that error, as does a read that
// fails. The session is never cancelled here.
func Wait(ctx context.Context, c *autoharness.Client, clock Clock, id string, budget time.Duration, seen func(*autoharness.Session) error) (*autoharness.Session, bool, error) {
	deadline := clock.Now().Add(budget)
	for {
		s, err := c.GetSession(ctx, id)
		if err != nil {
			return nil, false, err
		}
		if seen != nil {
			if err := seen(s); err != nil {
				return s, Terminal(s.Status), err
			}
		}
		if Terminal(s.Status) {
			return s, true, nil
		}
		left := deadline.Sub(clock.Now())
		if left <= 0 {
			return s, false, nil
		}
		if err := clock.Sleep(ctx, min(PollInterval, left)); err != nil {
			return s, false, err
		}
	}
}
