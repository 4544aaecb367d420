package autoharness

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
)

// SessionInput is a session to create. Fields left zero are not sent; the
// control plane says what it requires (a prompt, a target, a timeout).
type SessionInput struct {
	// RepositoryID, or else RepositoryName resolved to its id.
	RepositoryID   string
	RepositoryName string
	Prompt         string
	Target         *TargetRef
	// Fallbacks are tried in order when the target cannot run the session.
	Fallbacks []TargetRef
	// Timeout is the session's own bound, in seconds.
	Timeout int
	// Ref is the git ref the session starts from.
	Ref string
	// ConcurrencyID makes sessions of one identity run one at a time.
	ConcurrencyID   string
	QueueTTLSeconds int
	Priority        *int
	RequiredLabels  []string
	// Metadata is a JSON object of string, number, boolean or null values,
	// sent as it is.
	Metadata json.RawMessage
	Source   string
}

// sessionBody is POST /sessions's body, its keys in this order.
type sessionBody struct {
	RepositoryID    string          `json:"repositoryId,omitempty"`
	Prompt          string          `json:"prompt,omitempty"`
	Target          *TargetRef      `json:"target,omitempty"`
	Fallbacks       []TargetRef     `json:"fallbacks,omitempty"`
	Timeout         int             `json:"timeout,omitempty"`
	Ref             string          `json:"ref,omitempty"`
	ConcurrencyID   string          `json:"concurrencyId,omitempty"`
	QueueTTLSeconds int             `json:"queueTtlSeconds,omitempty"`
	Priority        *int            `json:"priority,omitempty"`
	RequiredLabels  []string        `json:"requiredLabels,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Source          string          `json:"source,omitempty"`
}

// CreateSession resolves in's names (target and fallbacks first, then the
// repository) and creates the session. Session.Created is false when the
// control plane answered with an existing session instead.
func (c *Client) CreateSession(ctx context.Context, in SessionInput) (*Session, error) {
	r := c.resolver()
	target, fallbacks, err := r.targets(ctx, in.Target, in.Fallbacks)
	if err != nil {
		return nil, err
	}
	repo := in.RepositoryID
	if repo == "" && in.RepositoryName != "" {
		if repo, err = r.repository(ctx, RepositoryNamed(in.RepositoryName)); err != nil {
			return nil, err
		}
	}
	body, err := Encode(sessionBody{
		RepositoryID: repo, Prompt: in.Prompt, Target: target, Fallbacks: fallbacks, Timeout: in.Timeout,
		Ref: in.Ref, ConcurrencyID: in.ConcurrencyID, QueueTTLSeconds: in.QueueTTLSeconds, Priority: in.Priority,
		RequiredLabels: in.RequiredLabels, Metadata: in.Metadata, Source: in.Source,
	})
	if err != nil {
		return nil, err
	}
	return fetch[Session](ctx, c.Request, Request{Method: "POST", Path: "/sessions", Body: body})
}

// GetSession reads a session.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	seg, err := segment("session", id)
	if err != nil {
		return nil, err
	}
	return fetch[Session](ctx, c.Request, Request{Path: "/sessions/" + seg})
}

// CancelSession cancels a queued or running session; a terminal one is a
// 409 CONFLICT.
func (c *Client) CancelSession(ctx context.Context, id string) (*Session, error) {
	seg, err := segment("session", id)
	if err != nil {
		return nil, err
	}
	return fetch[Session](ctx, c.Request, Request{Method: "POST", Path: "/sessions/" + seg + "/cancel"})
}

// ResumeInput overrides what a resumed session runs with. Target (and,
// only beside it, Fallbacks) rebinds the resume onto another command or
// provider, resolved by name as in CreateSession.
type ResumeInput struct {
	Prompt        string      `json:"prompt,omitempty"`
	Timeout       int         `json:"timeout,omitempty"`
	Priority      *int        `json:"priority,omitempty"`
	ConcurrencyID string      `json:"concurrencyId,omitempty"`
	Target        *TargetRef  `json:"target,omitempty"`
	Fallbacks     []TargetRef `json:"fallbacks,omitempty"`
}

// ResumeSession re-runs a terminal session that was assigned at least
// once; in may be nil, which sends no body.
func (c *Client) ResumeSession(ctx context.Context, id string, in *ResumeInput) (*Session, error) {
	seg, err := segment("session", id)
	if err != nil {
		return nil, err
	}
	r := Request{Method: "POST", Path: "/sessions/" + seg + "/resume"}
	if in != nil {
		body := *in
		if in.Target != nil {
			if body.Target, body.Fallbacks, err = c.resolver().targets(ctx, in.Target, in.Fallbacks); err != nil {
				return nil, err
			}
		}
		if r.Body, err = Encode(body); err != nil {
			return nil, err
		}
	}
	return fetch[Session](ctx, c.Request, r)
}

// SessionFilter narrows ListSessions; zero fields are not sent.
type SessionFilter struct {
	Status        string
	RepositoryID  string
	HostID        string
	Source        string
	Sort          string
	Limit         int
	Cursor        string
	ConcurrencyID string
	ScheduleID    string
}

// ListSessions reads one page of sessions; pass its NextCursor as the
// next call's Cursor.
func (c *Client) ListSessions(ctx context.Context, f SessionFilter) (*Page, error) {
	return fetch[Page](ctx, c.Request, Request{Path: "/sessions" + Query(
		"status", f.Status, "repositoryId", f.RepositoryID, "hostId", f.HostID, "source", f.Source,
		"sort", f.Sort, "limit", limit(f.Limit), "cursor", f.Cursor, "concurrencyId", f.ConcurrencyID,
		"scheduleId", f.ScheduleID)})
}

// limit is n as a query value, "" (not sent) for 0.
func limit(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Encode is v as compact JSON, with <, > and & as they are: a request
// body as the control plane's other clients send it.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// recorded is a record type that keeps its raw JSON.
type recorded interface{ setRaw(json.RawMessage) }

func (s *Session) setRaw(raw json.RawMessage)      { s.Raw = raw }
func (d *SessionDrain) setRaw(raw json.RawMessage) { d.Raw = raw }
func (r *Repository) setRaw(raw json.RawMessage)   { r.Raw = raw }
func (p *Page) setRaw(raw json.RawMessage)         { p.Raw = raw }

// fetch sends r and reads its answer as a T.
func fetch[T any, P interface {
	*T
	recorded
}](ctx context.Context, send func(context.Context, Request) (*Response, error), r Request) (*T, error) {
	resp, err := send(ctx, r)
	if err != nil {
		return nil, err
	}
	v := P(new(T))
	raw, err := record(&r, resp, v)
	if err != nil {
		return nil, err
	}
	v.setRaw(raw)
	return v, nil
}
