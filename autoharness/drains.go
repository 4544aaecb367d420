package autoharness

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// A principal's session drain cancels that principal's own queued and
// running sessions of one repository and then fences new admission from
// the same principal until the drain is released. It is neither a
// repository drain (DrainRepository) nor a host drain.

// StartSessionDrain starts a session drain of repo. An idempotencyKey, when
// given, makes a repeated start answer with the same drain, so a start
// whose answer was lost may be sent again.
func (c *Client) StartSessionDrain(ctx context.Context, repo RepositoryRef, idempotencyKey string) (*SessionDrain, error) {
	id, err := c.resolver().repository(ctx, repo)
	if err != nil {
		return nil, err
	}
	path, err := drainsPath(id, "")
	if err != nil {
		return nil, err
	}
	r := Request{Method: "POST", Path: path}
	if idempotencyKey != "" {
		r.Header = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	return fetch[SessionDrain](ctx, c.Request, r)
}

// GetSessionDrain reads a session drain.
func (c *Client) GetSessionDrain(ctx context.Context, repo RepositoryRef, operationID string) (*SessionDrain, error) {
	return c.drainCall(ctx, repo, operationID, "GET", "")
}

// ReleaseSessionDrain lifts a terminal drain's fence; a drain still
// draining is a 409 DRAIN_NOT_QUIESCENT.
func (c *Client) ReleaseSessionDrain(ctx context.Context, repo RepositoryRef, operationID string) (*SessionDrain, error) {
	return c.drainCall(ctx, repo, operationID, "POST", "/release")
}

func (c *Client) drainCall(ctx context.Context, repo RepositoryRef, operationID, method, suffix string) (*SessionDrain, error) {
	if _, err := segment("session drain", operationID); err != nil {
		return nil, err
	}
	id, err := c.resolver().repository(ctx, repo)
	if err != nil {
		return nil, err
	}
	path, err := drainsPath(id, operationID)
	if err != nil {
		return nil, err
	}
	return fetch[SessionDrain](ctx, c.Request, Request{Method: method, Path: path + suffix})
}

// drainsPath is /repositories/{repo}/session-drains, and /{op} after it
// when op is not "".
func drainsPath(repo, op string) (string, error) {
	seg, err := segment("repository", repo)
	if err != nil {
		return "", err
	}
	path := "/repositories/" + seg + "/session-drains"
	if op != "" {
		opSeg, err := segment("session drain", op)
		if err != nil {
			return "", err
		}
		path += "/" + opSeg
	}
	return path, nil
}

// WaitOptions bound WaitForSessionDrain.
type WaitOptions struct {
	// PollInterval is the pause between two reads of the drain.
	PollInterval time.Duration
	// Timeout is the whole wait's budget, name look-ups included.
	Timeout time.Duration
}

// WaitForSessionDrain resolves repo and reads the drain, at once and then
// every PollInterval, until its status is no longer draining, and returns
// it whatever that status is (failed and released included: the caller
// judges). Every request, each page of a name's look-up included, is cut
// to the time left of Timeout; when the budget runs out, or the request
// cut to it times out, the error is a *DrainWaitTimeoutError. A request
// that times out while budget remains is a *RequestTimeoutError.
func (c *Client) WaitForSessionDrain(ctx context.Context, repo RepositoryRef, operationID string, o WaitOptions) (*SessionDrain, error) {
	if o.PollInterval <= 0 {
		return nil, errors.New("pollInterval must be a positive duration")
	}
	if o.Timeout <= 0 {
		return nil, errors.New("timeout must be a positive duration")
	}
	if _, err := segment("session drain", operationID); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Timeout)
	current := repo
	expired := func() error {
		return &DrainWaitTimeoutError{Repository: current, OperationID: operationID, Timeout: o.Timeout}
	}
	send := func(ctx context.Context, r Request) (*Response, error) {
		left := time.Until(deadline)
		clamped := left <= c.timeout
		resp, err := c.do(ctx, r, clamp(min(c.timeout, left)))
		var timedOut *RequestTimeoutError
		if errors.As(err, &timedOut) && (clamped || !time.Now().Before(deadline)) {
			return nil, expired()
		}
		return resp, err
	}
	id, err := (&resolver{c: c, send: send}).repository(ctx, repo)
	if err != nil {
		return nil, err
	}
	current = RepositoryByID(id)
	path, err := drainsPath(id, operationID)
	if err != nil {
		return nil, err
	}
	for {
		if !time.Now().Before(deadline) {
			return nil, expired()
		}
		d, err := fetch[SessionDrain](ctx, send, Request{Path: path})
		if err != nil {
			return nil, err
		}
		if d.Terminal() {
			return d, nil
		}
		delay := min(o.PollInterval, time.Until(deadline))
		if delay <= 0 {
			return nil, expired()
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// clamp is d rounded up to a whole millisecond, and at least one.
func clamp(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return time.Millisecond
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
