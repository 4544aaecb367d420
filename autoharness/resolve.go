package autoharness

import (
	"context"
	"errors"
	"fmt"
)

// TargetRef names what runs a session: a provider or a command, by id or
// by name. A reference with an id (ProviderID or CommandID) is sent as it
// is; otherwise ProviderName, else CommandName, is resolved to the id of
// the one catalogue entry of that name.
type TargetRef struct {
	ProviderID   string `json:"providerId,omitempty"`
	ProviderName string `json:"providerName,omitempty"`
	CommandID    string `json:"commandId,omitempty"`
	CommandName  string `json:"commandName,omitempty"`
}

// byID reports whether t is sent as it is.
func (t TargetRef) byID() bool { return t.ProviderID != "" || t.CommandID != "" }

// RepositoryRef names a repository by id or, when ID is "", by name.
type RepositoryRef struct {
	ID   string
	Name string
}

// RepositoryByID is the reference to the repository with id.
func RepositoryByID(id string) RepositoryRef { return RepositoryRef{ID: id} }

// RepositoryNamed is the reference to the one repository named name.
func RepositoryNamed(name string) RepositoryRef { return RepositoryRef{Name: name} }

// catalogue is what tells one catalogue's names from another's.
type catalogue struct {
	one, many          string // "provider", "providers"
	path               string
	unknown, ambiguous string
}

var (
	providers    = catalogue{"provider", "providers", "/providers", CodeUnknownProviderName, CodeAmbiguousProviderName}
	commands     = catalogue{"command", "commands", "/commands", CodeUnknownCommandName, CodeAmbiguousCommandName}
	repositories = catalogue{"repository", "repositories", "/repositories", CodeUnknownRepositoryName, CodeAmbiguousRepositoryName}
)

// maxCataloguePages bounds a catalogue listing.
const maxCataloguePages = 20

// resolver turns names into ids for one call, listing each catalogue at
// most once however many references need it.
type resolver struct {
	c *Client
	// send is the call's way of sending a request (WaitForSessionDrain
	// cuts each one to the time it has left).
	send   func(context.Context, Request) (*Response, error)
	listed map[string][]CatalogEntry
}

func (c *Client) resolver() *resolver {
	return &resolver{c: c, send: c.Request}
}

// targets resolves a target and its fallbacks, in order.
func (r *resolver) targets(ctx context.Context, target *TargetRef, fallbacks []TargetRef) (*TargetRef, []TargetRef, error) {
	var out *TargetRef
	if target != nil {
		t, err := r.target(ctx, *target)
		if err != nil {
			return nil, nil, err
		}
		out = &t
	}
	var fs []TargetRef
	for _, f := range fallbacks {
		t, err := r.target(ctx, f)
		if err != nil {
			return nil, nil, err
		}
		fs = append(fs, t)
	}
	return out, fs, nil
}

func (r *resolver) target(ctx context.Context, t TargetRef) (TargetRef, error) {
	switch {
	case t.byID():
		return t, nil
	case t.ProviderName != "":
		id, err := r.id(ctx, providers, t.ProviderName)
		return TargetRef{ProviderID: id}, err
	case t.CommandName != "":
		id, err := r.id(ctx, commands, t.CommandName)
		return TargetRef{CommandID: id}, err
	}
	return t, nil
}

// repository is ref's id, looked up by name when it has none.
func (r *resolver) repository(ctx context.Context, ref RepositoryRef) (string, error) {
	if ref.ID != "" {
		return ref.ID, nil
	}
	if ref.Name == "" {
		return "", errors.New("autoharness: a repository id or name is required")
	}
	return r.id(ctx, repositories, ref.Name)
}

// id is the id of the one entry of cat named name.
func (r *resolver) id(ctx context.Context, cat catalogue, name string) (string, error) {
	entries, ok := r.listed[cat.path]
	if !ok {
		var err error
		if cat == repositories {
			entries, err = r.allRepositories(ctx)
		} else {
			entries, err = listCatalogue(ctx, r.send, cat.path)
		}
		if err != nil {
			return "", err
		}
		if r.listed == nil {
			r.listed = map[string][]CatalogEntry{}
		}
		r.listed[cat.path] = entries
	}
	var id string
	n := 0
	for _, e := range entries {
		if e.Name == name {
			id = e.ID
			n++
		}
	}
	switch {
	case n == 0:
		return "", &Error{Status: 400, Code: cat.unknown, Message: `no ` + cat.one + ` named "` + name + `"`}
	case n > 1:
		// The ids stay out of the message: the name is all the caller gave.
		return "", &Error{Status: 400, Code: cat.ambiguous, Message: fmt.Sprintf(`ambiguous %s name "%s": %d %s share this name`, cat.one, name, n, cat.many)}
	}
	return id, nil
}

// allRepositories pages through the whole repository listing. Unlike a
// catalogue it has no page bound (a fleet may hold many repositories), but
// a cursor the server gave before ends it.
func (r *resolver) allRepositories(ctx context.Context) ([]CatalogEntry, error) {
	return pages(ctx, r.send, repositories.path, func(cursor string) string { return Query("cursor", cursor) }, 0)
}

// listCatalogue pages through a provider or command catalogue, 100 entries
// a page, for at most maxCataloguePages pages.
func listCatalogue(ctx context.Context, send func(context.Context, Request) (*Response, error), path string) ([]CatalogEntry, error) {
	return pages(ctx, send, path, func(cursor string) string { return Query("limit", "100", "cursor", cursor) }, maxCataloguePages)
}

// pages collects the entries of path's pages (each page's query made by
// q from the cursor), following nextCursor; a cursor seen before is
// refused, and so is a next page past limit when limit is not 0.
func pages(ctx context.Context, send func(context.Context, Request) (*Response, error), path string, q func(cursor string) string, limit int) ([]CatalogEntry, error) {
	var out []CatalogEntry
	seen := map[string]bool{}
	cursor := ""
	for n := 1; ; n++ {
		p, err := fetch[Page](ctx, send, Request{Path: path + q(cursor)})
		if err != nil {
			return nil, err
		}
		for _, item := range p.Items {
			var e CatalogEntry
			if _, err := record(&Request{Path: path}, &Response{Body: item}, &e); err != nil {
				return nil, err
			}
			e.Raw = item
			out = append(out, e)
		}
		switch {
		case p.NextCursor == "":
			return out, nil
		case seen[p.NextCursor]:
			return nil, fmt.Errorf("%w for %s", ErrRepeatedCursor, path)
		case limit > 0 && n == limit:
			return nil, fmt.Errorf("%w for %s", ErrTooManyPages, path)
		}
		seen[p.NextCursor] = true
		cursor = p.NextCursor
	}
}
