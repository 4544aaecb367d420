package operator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/metaharness/metaharness/autoharness"
)

// MaxPages bounds a listing followed to its end (--all): past it the
// listing stops and says what remains, rather than collecting without
// bound.
const MaxPages = 20

// Listing is a listing followed page by page.
type Listing struct {
	// Items are every page's items, in order, as the server sent them.
	Items []json.RawMessage
	// Remaining is the cursor still left after MaxPages pages, "" when the
	// listing ended.
	Remaining string
}

// All follows the listing at path (its query made by query from a page's
// cursor) from cursor ("" for the first page) for at most MaxPages pages.
// A cursor the server gave before, or the one it started from, ends it in
// an error rather than a loop.
func All(ctx context.Context, c *autoharness.Client, path string, query func(cursor string) string, cursor string) (*Listing, error) {
	seen := map[string]bool{}
	if cursor != "" {
		seen[cursor] = true
	}
	out := &Listing{}
	for range MaxPages {
		p, err := c.ReadPage(ctx, path+query(cursor))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, p.Items...)
		if p.NextCursor == "" {
			return out, nil
		}
		if seen[p.NextCursor] {
			return nil, fmt.Errorf("repeated pagination cursor for %s", path)
		}
		seen[p.NextCursor] = true
		cursor = p.NextCursor
	}
	out.Remaining = cursor
	return out, nil
}
