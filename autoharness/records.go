package autoharness

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// Each record below keeps the server's JSON as it came (Raw) beside the
// fields this package and its callers read; MarshalJSON gives Raw back, so
// encoding a record writes what the server sent (json.Marshal compacts it
// and escapes <, > and & again; Raw itself, or an Encoder with
// SetEscapeHTML(false), keeps them).

// Session is a session record.
type Session struct {
	ID           string `json:"id"`
	RepositoryID string `json:"repositoryId"`
	// Status is queued, running, completed, failed, cancelled or timed_out.
	Status string `json:"status"`
	Type   string `json:"type"`
	Source string `json:"source"`
	// URL is the session's page in the control plane's UI.
	URL string `json:"url"`
	// Created is true when a create or resume made a new session, false
	// when it answered with an existing one (deduplicated).
	Created      bool   `json:"created"`
	ExitCode     *int   `json:"exitCode"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
	CreatedAt    string `json:"createdAt"`
	CompletedAt  string `json:"completedAt"`

	Raw json.RawMessage `json:"-"`
}

// MarshalJSON is the record as the server sent it.
func (s Session) MarshalJSON() ([]byte, error) { return rawOrNull(s.Raw), nil }

// Drain statuses: a drain is draining until it ends in one of the others.
const (
	DrainDraining  = "draining"
	DrainSucceeded = "succeeded"
	DrainFailed    = "failed"
	DrainReleased  = "released"
)

// SessionDrain is a principal's session drain of one repository: the
// durable operation that cancels the principal's queued and running
// sessions there and then fences new ones until it is released.
type SessionDrain struct {
	OperationID  string `json:"operationId"`
	RepositoryID string `json:"repositoryId"`
	// Status is one of the Drain* constants (or a later server's word).
	Status string `json:"status"`
	// StatusURL is the drain's route relative to the API's host.
	StatusURL      string `json:"statusUrl"`
	RequestedAt    string `json:"requestedAt"`
	UpdatedAt      string `json:"updatedAt"`
	DeadlineAt     string `json:"deadlineAt"`
	QueuedCount    int64  `json:"queuedCount"`
	RunningCount   int64  `json:"runningCount"`
	CancelledCount int64  `json:"cancelledCount"`
	CompletedAt    string `json:"completedAt"`
	ReleasedAt     string `json:"releasedAt"`
	FailureCode    string `json:"failureCode"`

	Raw json.RawMessage `json:"-"`
}

// MarshalJSON is the record as the server sent it.
func (d SessionDrain) MarshalJSON() ([]byte, error) { return rawOrNull(d.Raw), nil }

// Terminal reports whether the drain has ended: any status but draining.
func (d *SessionDrain) Terminal() bool { return d.Status != DrainDraining }

// Repository is a repository record.
type Repository struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	URL           string `json:"url"`
	DefaultBranch string `json:"defaultBranch"`
	Status        string `json:"status"`

	Raw json.RawMessage `json:"-"`
}

// MarshalJSON is the record as the server sent it.
func (r Repository) MarshalJSON() ([]byte, error) { return rawOrNull(r.Raw), nil }

// CatalogEntry is one provider or command of a catalogue.
type CatalogEntry struct {
	ID   string `json:"id"`
	Name string `json:"name"`

	Raw json.RawMessage `json:"-"`
}

// MarshalJSON is the record as the server sent it.
func (e CatalogEntry) MarshalJSON() ([]byte, error) { return rawOrNull(e.Raw), nil }

// Page is one page of a listing.
type Page struct {
	// Items are the page's records as the server sent them.
	Items []json.RawMessage `json:"items"`
	// NextCursor continues the listing; "" on the last page.
	NextCursor string `json:"nextCursor"`

	Raw json.RawMessage `json:"-"`
}

// MarshalJSON is the page as the server sent it.
func (p Page) MarshalJSON() ([]byte, error) { return rawOrNull(p.Raw), nil }

func rawOrNull(raw json.RawMessage) []byte {
	if raw == nil {
		return []byte("null")
	}
	return raw
}

// Decode sends r and decodes its answer's JSON body into v as the records
// of this package are read (strictly: a key given twice is refused), and
// returns the body as the server sent it: for a route this package has no
// method of (an inventory, a service account).
func (c *Client) Decode(ctx context.Context, r Request, v any) (json.RawMessage, error) {
	resp, err := c.Request(ctx, r)
	if err != nil {
		return nil, err
	}
	return record(&r, resp, v)
}

// record decodes an answer's body into v's fields, refusing a body that
// gives a key twice (the strict reader), and returns the body to keep as
// Raw.
func record(r *Request, resp *Response, v any) (json.RawMessage, error) {
	method := r.Method
	if method == "" {
		method = "GET"
	}
	if resp.Body == nil {
		return nil, fmt.Errorf("autoharness: %s %s answered HTTP %d without a JSON record", method, r.Path, resp.Status)
	}
	if err := jsonscan.Decode(resp.Body, v, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("autoharness: the answer to %s %s: %w", method, r.Path, err)
	}
	return resp.Body, nil
}
