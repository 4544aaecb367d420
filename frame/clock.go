package frame

import (
	"sort"
	"sync"
	"time"
)

// Clock is where the engine reads time and arms deadlines. A run uses
// SystemClock; tests and C3 vectors use a ManualClock, so that no test
// sleeps.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, on a goroutine of the clock's choosing, when d
	// has passed, unless the timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is an armed AfterFunc.
type Timer interface {
	// Stop disarms the timer; it reports whether it did so before f ran.
	Stop() bool
}

// SystemClock is the real clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock moves only when Advance is called, and runs due timers on the
// caller's goroutine, in the order they fall due.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	next   uint64
	timers []*manualTimer
}

type manualTimer struct {
	c   *ManualClock
	at  time.Time
	seq uint64
	f   func()
}

// NewManualClock starts a clock at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	t := &manualTimer{c: c, at: c.now.Add(d), seq: c.next, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock forward by d, running every timer that falls due
// on the way (at or before the new time), each with the clock set to its
// due time. A timer armed by a running timer runs too if it falls due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		sort.Slice(c.timers, func(i, j int) bool {
			a, b := c.timers[i], c.timers[j]
			return a.at.Before(b.at) || (a.at.Equal(b.at) && a.seq < b.seq)
		})
		if len(c.timers) == 0 || c.timers[0].at.After(end) {
			break
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}
