package frame

import (
	"strings"
	"testing"
	"time"
)

func TestManualClockRunsDueTimersInOrder(t *testing.T) {
	c := NewManualClock(time.Unix(0, 0))
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(time.Unix(0, 0)).String()) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(1*time.Second, at("a"))
	stopped := c.AfterFunc(2*time.Second, at("stopped"))
	c.AfterFunc(1*time.Second, func() {
		at("b")()
		c.AfterFunc(time.Second, at("armed-by-b")) // due at 2s, inside this Advance
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports wrongly")
	}
	c.Advance(2 * time.Second)
	if s := strings.Join(got, " "); s != "a@1s b@1s armed-by-b@2s" {
		t.Fatalf("fired %s", s)
	}
	c.Advance(time.Second - 1)
	if len(got) != 3 {
		t.Fatal("a timer fired early")
	}
	c.Advance(1)
	if got[3] != "c@3s" || c.Now() != time.Unix(3, 0) {
		t.Fatalf("fired %v at %v", got, c.Now())
	}
}
