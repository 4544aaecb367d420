package autoharness

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// drains answers the drain d of repo-1 with each status in turn, the last
// one for good, and the repository listing with repo-1 named "named".
func drains(t *testing.T, statuses ...string) *recorder {
	var n atomic.Int32
	return newRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.RequestURI() {
		case "/api/v1/repositories":
			io.WriteString(w, `{"items":[{"id":"repo-1","name":"named"}]}`)
		case "/api/v1/repositories/repo-1/session-drains/d":
			i := min(int(n.Add(1))-1, len(statuses)-1)
			fmt.Fprintf(w, `{"operationId":"d","repositoryId":"repo-1","status":%q,"queuedCount":0,"runningCount":0,"cancelledCount":3,"failureCode":%q}`,
				statuses[i], map[bool]string{true: "CANCEL_FAILED"}[statuses[i] == "failed"])
		default:
			w.WriteHeader(404)
		}
	}))
}

func TestWaitForSessionDrainPollsToTheEnd(t *testing.T) {
	for _, final := range []string{DrainSucceeded, DrainFailed, DrainReleased, "something-new"} {
		t.Run(final, func(t *testing.T) {
			rec := drains(t, DrainDraining, DrainDraining, final)
			d, err := client(t, rec).WaitForSessionDrain(bg, RepositoryByID("repo-1"), "d", WaitOptions{PollInterval: 5 * time.Millisecond, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != final || (final == DrainFailed) != (d.FailureCode == "CANCEL_FAILED") {
				t.Errorf("drain %+v", d)
			}
			if n := len(rec.requests()); n != 3 {
				t.Errorf("%d polls, want 3 (the first at once)", n)
			}
		})
	}
	t.Run("by name", func(t *testing.T) {
		rec := drains(t, DrainSucceeded)
		if _, err := client(t, rec).WaitForSessionDrain(bg, RepositoryNamed("named"), "d", WaitOptions{PollInterval: time.Millisecond, Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if got := paths(rec); fmt.Sprint(got) != "[GET /repositories GET /repositories/repo-1/session-drains/d]" {
			t.Errorf("requests %v", got)
		}
	})
}

func TestWaitForSessionDrainRefusesBadOptions(t *testing.T) {
	rec := drains(t, DrainSucceeded)
	c := client(t, rec)
	for _, c2 := range []struct {
		o    WaitOptions
		want string
	}{
		{WaitOptions{Timeout: time.Second}, "pollInterval must be a positive duration"},
		{WaitOptions{PollInterval: -1, Timeout: time.Second}, "pollInterval must be a positive duration"},
		{WaitOptions{PollInterval: time.Second}, "timeout must be a positive duration"},
		{WaitOptions{PollInterval: time.Second, Timeout: -time.Second}, "timeout must be a positive duration"},
	} {
		if _, err := c.WaitForSessionDrain(bg, RepositoryNamed("named"), "d", c2.o); err == nil || err.Error() != c2.want {
			t.Errorf("%+v: %v, want %q", c2.o, err, c2.want)
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("%d requests before the options were checked", n)
	}
}

func TestWaitForSessionDrainBudget(t *testing.T) {
	t.Run("the budget runs out between polls", func(t *testing.T) {
		rec := drains(t, DrainDraining)
		_, err := client(t, rec).WaitForSessionDrain(bg, RepositoryByID("repo-1"), "d", WaitOptions{PollInterval: 10 * time.Millisecond, Timeout: 60 * time.Millisecond})
		var dw *DrainWaitTimeoutError
		if !errors.As(err, &dw) || dw.Repository != RepositoryByID("repo-1") || dw.OperationID != "d" || dw.Timeout != 60*time.Millisecond ||
			err.Error() != "Auto Harness session drain wait timed out after 60ms" || ErrorCode(err) != CodeDrainWaitTimeout {
			t.Fatalf("error %#v", err)
		}
		if n := len(rec.requests()); n < 2 {
			t.Errorf("%d polls, want several", n)
		}
	})
	t.Run("the clamped poll times out at the deadline", func(t *testing.T) {
		rec := drains(t, DrainDraining)
		rec.setMode(hangHeaders)
		start := time.Now()
		_, err := client(t, rec).WaitForSessionDrain(bg, RepositoryByID("repo-1"), "d", WaitOptions{PollInterval: time.Second, Timeout: 40 * time.Millisecond})
		var dw *DrainWaitTimeoutError
		if !errors.As(err, &dw) || dw.Repository != RepositoryByID("repo-1") {
			t.Fatalf("error %#v, want the drain wait's timeout", err)
		}
		if elapsed := time.Since(start); elapsed > 20*time.Second {
			t.Errorf("the wait took %v: its request was not cut to the budget", elapsed)
		}
		sent := rec.requests()
		if len(sent) != 1 || sent[0].Left > 40*time.Millisecond {
			t.Errorf("%d requests, the first with %v left; want one cut to the 40ms budget", len(sent), sent[0].Left)
		}
	})
	t.Run("the clamped name look-up times out at the deadline", func(t *testing.T) {
		rec := drains(t, DrainDraining)
		rec.setMode(hangBody)
		_, err := client(t, rec).WaitForSessionDrain(bg, RepositoryNamed("named"), "d", WaitOptions{PollInterval: time.Second, Timeout: 40 * time.Millisecond})
		var dw *DrainWaitTimeoutError
		if !errors.As(err, &dw) || dw.Repository != RepositoryNamed("named") || dw.OperationID != "d" {
			t.Fatalf("error %#v, want the drain wait's timeout naming the repository as given", err)
		}
		sent := rec.requests()
		if len(sent) != 1 || !strings.HasSuffix(sent[0].URL, "/api/v1/repositories") || sent[0].Left > 40*time.Millisecond {
			t.Errorf("requests %+v; want the listing, cut to the budget", sent)
		}
	})
	t.Run("a request times out while budget remains", func(t *testing.T) {
		rec := drains(t, DrainDraining)
		rec.setMode(hangHeaders)
		_, err := client(t, rec, timeout(20*time.Millisecond)).WaitForSessionDrain(bg, RepositoryByID("repo-1"), "d", WaitOptions{PollInterval: time.Second, Timeout: time.Minute})
		var te *RequestTimeoutError
		if !errors.As(err, &te) || te.Timeout != 20*time.Millisecond {
			t.Fatalf("error %#v, want the request's own timeout", err)
		}
		if n := len(rec.requests()); n != 1 {
			t.Errorf("%d requests, want 1: nothing is retried", n)
		}
	})
	t.Run("every request is cut to what is left", func(t *testing.T) {
		rec := drains(t, DrainDraining, DrainDraining, DrainDraining, DrainSucceeded)
		start := time.Now()
		if _, err := client(t, rec).WaitForSessionDrain(bg, RepositoryNamed("named"), "d", WaitOptions{PollInterval: 20 * time.Millisecond, Timeout: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		sent := rec.requests()
		if len(sent) != 5 {
			t.Errorf("%d requests, want the listing and 4 polls", len(sent))
		}
		for i, s := range sent {
			// Rounded up to a whole millisecond, never past the budget's end.
			if s.Deadline.After(start.Add(5*time.Second + time.Millisecond)) {
				t.Errorf("request %d (%s) could run %v past the wait's deadline", i, s.URL, s.Deadline.Sub(start.Add(5*time.Second)))
			}
		}
		// With a budget larger than the request timeout, each request has
		// the request timeout.
		rec = drains(t, DrainSucceeded)
		if _, err := client(t, rec, timeout(time.Second)).WaitForSessionDrain(bg, RepositoryByID("repo-1"), "d", WaitOptions{PollInterval: time.Second, Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if left := rec.requests()[0].Left; left > time.Second {
			t.Errorf("the request had %v, more than the 1s request timeout", left)
		}
	})
	t.Run("other errors come through", func(t *testing.T) {
		rec := newRecorder(t, routes{})
		_, err := client(t, rec).WaitForSessionDrain(bg, RepositoryByID("repo-1"), "d", WaitOptions{PollInterval: time.Second, Timeout: time.Minute})
		if ErrorCode(err) != "NOT_FOUND" {
			t.Errorf("error %v", err)
		}
	})
}

func TestClamp(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		-time.Second: time.Millisecond, 0: time.Millisecond, 1: time.Millisecond, time.Millisecond: time.Millisecond,
		time.Millisecond + 1: 2 * time.Millisecond, 1500 * time.Microsecond: 2 * time.Millisecond, 30 * time.Second: 30 * time.Second,
	} {
		if got := clamp(in); got != want {
			t.Errorf("clamp(%v) = %v, want %v", in, got, want)
		}
	}
}
