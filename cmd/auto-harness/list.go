package main

import (
	"encoding/json"
	"fmt"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/operator"
)

// pageFlags are a listing's flags.
type pageFlags struct {
	Limit  *int       `name:"limit" placeholder:"N" help:"At most N items a page."`
	Cursor *string    `name:"cursor" placeholder:"C" help:"Start at this page (a listing's nextCursor)."`
	All    switchFlag `name:"all" help:"Follow the pages to the end, at most 20."`
	JSON   switchFlag `name:"json" help:"Print the page as the server sent it (with --all, {\"items\":[…]})."`
}

// check refuses a limit that is not a positive integer.
func (p *pageFlags) check() error {
	return positive("--limit", p.Limit)
}

// positive refuses a flag's integer when it is given and not above 0.
func positive(flag string, n *int) error {
	if n != nil && *n <= 0 {
		return usageErrorf("%s must be a positive integer", flag)
	}
	return nil
}

// listing is one listing command's route and what it prints.
type listing struct {
	path   string
	things string   // "hosts", in "(no hosts)" and the paging lines
	filter []string // the fields an item may show, nil for all
	// before are query pairs sent ahead of limit and cursor.
	before []string
	// line is an item's human line.
	line func(item json.RawMessage) (string, error)
}

// list prints one page, or with --all every page up to the bound.
func (p *pageFlags) list(a *app, client *autoharness.Client, l listing) error {
	limit := ""
	if p.Limit != nil {
		limit = fmt.Sprint(*p.Limit)
	}
	query := func(cursor string) string {
		return autoharness.Query(append(append([]string(nil), l.before...), "limit", limit, "cursor", cursor)...)
	}
	cursor := ""
	if p.Cursor != nil {
		cursor = *p.Cursor
	}
	var items []json.RawMessage
	next := ""
	if p.All {
		all, err := operator.All(a.ctx, client, l.path, query, cursor)
		if err != nil {
			return err
		}
		items = all.Items
		if all.Remaining != "" {
			defer fmt.Fprintf(a.w.stderr, "warning: --all stopped after %d pages; more %s remain (nextCursor: %s)\n", operator.MaxPages, l.things, all.Remaining)
		}
	} else {
		page, err := client.ReadPage(a.ctx, l.path+query(cursor))
		if err != nil {
			return err
		}
		items, next = page.Items, page.NextCursor
		if p.JSON && l.filter == nil {
			return printJSON(a.w.stdout, page.Raw)
		}
	}
	if l.filter != nil {
		for i, item := range items {
			m, err := operator.Allowlisted(item, l.filter)
			if err != nil {
				return fmt.Errorf("an item of %s: %w", l.path, err)
			}
			items[i] = operator.Object(m)
		}
	}
	if p.JSON {
		if items == nil {
			items = []json.RawMessage{}
		}
		out := []operator.Member{{Key: "items", Value: operator.MustEncode(items)}}
		if next != "" {
			out = append(out, operator.Member{Key: "nextCursor", Value: operator.MustEncode(next)})
		}
		return printJSON(a.w.stdout, operator.Object(out))
	}
	if len(items) == 0 {
		fmt.Fprintf(a.w.stdout, "(no %s)\n", l.things)
	}
	for _, item := range items {
		line, err := l.line(item)
		if err != nil {
			return fmt.Errorf("an item of %s: %w", l.path, err)
		}
		fmt.Fprintln(a.w.stdout, line)
	}
	if next != "" {
		fmt.Fprintf(a.w.stdout, "more %s available; pass --cursor %s to continue (or --all)\n", l.things, next)
	}
	return nil
}
