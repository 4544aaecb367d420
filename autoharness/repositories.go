package autoharness

import "context"

// PageOptions page a listing: Limit entries (0 leaves it to the server)
// from Cursor (a page's NextCursor; "" for the first page).
type PageOptions struct {
	Limit  int
	Cursor string
}

// ListRepositories reads one page of repositories.
func (c *Client) ListRepositories(ctx context.Context, o PageOptions) (*Page, error) {
	return fetch[Page](ctx, c.Request, Request{Path: "/repositories" + Query("limit", limit(o.Limit), "cursor", o.Cursor)})
}

// ReadPage reads one page of any listing at path (with its query, such as
// "/hosts"+Query("limit", "50")): its items as the server sent them and its
// nextCursor.
func (c *Client) ReadPage(ctx context.Context, path string) (*Page, error) {
	return fetch[Page](ctx, c.Request, Request{Path: path})
}

// PauseRepository stops new sessions of a repository from being assigned.
func (c *Client) PauseRepository(ctx context.Context, id string) (*Repository, error) {
	return c.repositoryAction(ctx, id, "pause")
}

// DrainRepository lets a repository's running sessions finish and admits
// no new ones (for every principal, unlike a session drain).
func (c *Client) DrainRepository(ctx context.Context, id string) (*Repository, error) {
	return c.repositoryAction(ctx, id, "drain")
}

// ActivateRepository returns a paused or drained repository to service.
func (c *Client) ActivateRepository(ctx context.Context, id string) (*Repository, error) {
	return c.repositoryAction(ctx, id, "activate")
}

func (c *Client) repositoryAction(ctx context.Context, id, action string) (*Repository, error) {
	seg, err := segment("repository", id)
	if err != nil {
		return nil, err
	}
	return fetch[Repository](ctx, c.Request, Request{Method: "POST", Path: "/repositories/" + seg + "/" + action})
}

// ListProviders reads the whole provider catalogue, following its pages
// (at most 20 of 100 entries).
func (c *Client) ListProviders(ctx context.Context) ([]CatalogEntry, error) {
	return listCatalogue(ctx, c.Request, providers.path)
}

// ListCommands reads the whole command catalogue, as ListProviders does.
func (c *Client) ListCommands(ctx context.Context) ([]CatalogEntry, error) {
	return listCatalogue(ctx, c.Request, commands.path)
}
