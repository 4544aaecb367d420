package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/internal/jsonscan"
)

// MaxInventoryWrites bounds an attach's or a detach's writes: a 409 (the
// record changed since it was read) re-reads it and writes again, at most
// this many writes in all.
const MaxInventoryWrites = 3

// Inventory is a host's inventory record as read: every member as the
// server sent it (Raw), with what attach and detach read of it.
type Inventory struct {
	Raw json.RawMessage
	// Version is the record's version as the server wrote it, 0 when it
	// has none: what a write sends back for the control plane's
	// optimistic concurrency.
	Version json.RawMessage
	// Repositories are the repositories attached to the host, in order.
	Repositories []Attached
	// ProviderAccounts is how many provider accounts the host serves.
	ProviderAccounts int
}

// Attached is a repository in a host's inventory.
type Attached struct {
	ID        string
	Path      string
	Worktrees []string // their ids
	Raw       json.RawMessage
}

// Entry is a repository to attach to a host.
type Entry struct {
	ID            string     `json:"id"`
	Path          string     `json:"path"`
	DefaultBranch string     `json:"defaultBranch,omitempty"`
	Worktrees     []Worktree `json:"worktrees"`
}

// Worktree is a worktree of an Entry: Name is its slug, unique across the
// fleet; Labels are never nil (the record has a list).
type Worktree struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Labels []string `json:"labels"`
}

// inventoryPath is the route of hostID's inventory.
func inventoryPath(hostID string) string {
	return "/hosts/" + autoharness.PathEscape(hostID) + "/inventory"
}

// GetInventory reads hostID's inventory.
func GetInventory(ctx context.Context, c *autoharness.Client, hostID string) (*Inventory, error) {
	raw, err := c.Decode(ctx, autoharness.Request{Path: inventoryPath(hostID)}, &json.RawMessage{})
	if err != nil {
		return nil, err
	}
	inv, err := ParseInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("the inventory of host %s: %w", hostID, err)
	}
	return inv, nil
}

// ParseInventory reads an inventory record as the control plane sent it.
func ParseInventory(raw json.RawMessage) (*Inventory, error) {
	var shape struct {
		Version          json.RawMessage   `json:"version"`
		Repositories     []json.RawMessage `json:"repositories"`
		ProviderAccounts []json.RawMessage `json:"providerAccounts"`
	}
	// Strictly: a key twice, or in another case, is refused, since which
	// one the control plane reads is a guess.
	if err := jsonscan.Decode(raw, &shape, jsonscan.Options{}); err != nil {
		return nil, err
	}
	inv := &Inventory{Raw: raw, Version: shape.Version, ProviderAccounts: len(shape.ProviderAccounts)}
	if len(inv.Version) == 0 || string(inv.Version) == "null" {
		inv.Version = json.RawMessage("0")
	}
	for _, repo := range shape.Repositories {
		var a struct {
			ID        string `json:"id"`
			Path      string `json:"path"`
			Worktrees []struct {
				ID string `json:"id"`
			} `json:"worktrees"`
		}
		if err := json.Unmarshal(repo, &a); err != nil {
			return nil, fmt.Errorf("a repository: %w", err)
		}
		at := Attached{ID: a.ID, Path: a.Path, Raw: repo}
		for _, w := range a.Worktrees {
			at.Worktrees = append(at.Worktrees, w.ID)
		}
		inv.Repositories = append(inv.Repositories, at)
	}
	return inv, nil
}

// find is the attached repository of id, nil when there is none.
func (inv *Inventory) find(id string) *Attached {
	for i := range inv.Repositories {
		if inv.Repositories[i].ID == id {
			return &inv.Repositories[i]
		}
	}
	return nil
}

// ids are the attached repositories' ids, "(none)" when there are none.
func (inv *Inventory) ids() string {
	var ids []string
	for _, a := range inv.Repositories {
		ids = append(ids, a.ID)
	}
	if len(ids) == 0 {
		return "(none)"
	}
	return strings.Join(ids, ", ")
}

// with is the record as read with repos for its repositories and its
// version kept.
func (inv *Inventory) with(repos []json.RawMessage) (json.RawMessage, error) {
	return replace(inv.Raw, Member{"repositories", MustEncode(repos)}, Member{"version", inv.Version})
}

// Change is what an attach or a detach did, or would do.
type Change struct {
	// Done: the record was written (attached or detached by this call).
	Done bool
	// DryRun: nothing was written; the change is what would be written.
	DryRun bool
	// ConvergedElsewhere: another writer made the same change first.
	ConvergedElsewhere bool
	HostID             string
	RepositoryID       string
	Path               string
	// Repository is the repository's entry: the one written, or the one
	// found when another writer converged.
	Repository  json.RawMessage
	WorktreeIDs []string
	// FromVersion is the version read (nil when converged); ToVersion the
	// version written (nil on a dry run).
	FromVersion json.RawMessage
	ToVersion   json.RawMessage

	done string // "attached" or "detached": Done's key in JSON
}

// MarshalJSON is the change as the CLI's --json prints it:
// {attached|detached, dryRun, convergedElsewhere, hostId, repository,
// worktreeIds, fromVersion, toVersion}, the versions when known.
func (ch *Change) MarshalJSON() ([]byte, error) {
	wt := ch.WorktreeIDs
	if wt == nil {
		wt = []string{}
	}
	members := []Member{
		{ch.done, MustEncode(ch.Done)}, {"dryRun", MustEncode(ch.DryRun)},
		{"convergedElsewhere", MustEncode(ch.ConvergedElsewhere)}, {"hostId", MustEncode(ch.HostID)},
		{"repository", ch.Repository}, {"worktreeIds", MustEncode(wt)},
	}
	if ch.FromVersion != nil {
		members = append(members, Member{"fromVersion", ch.FromVersion})
	}
	if ch.ToVersion != nil {
		members = append(members, Member{"toVersion", ch.ToVersion})
	}
	return Object(members), nil
}

// Attach adds entry to hostID's inventory: the record exactly as read with
// entry after its repositories and the version read kept. A repository
// already attached is refused (nothing is overwritten); a 409 re-reads and
// writes again (MaxInventoryWrites in all), and another writer's attach of
// the same repository at the same path counts as done.
func Attach(ctx context.Context, c *autoharness.Client, hostID string, entry Entry, dryRun bool) (*Change, error) {
	if entry.Worktrees == nil {
		entry.Worktrees = []Worktree{}
	}
	raw, err := autoharness.Encode(entry)
	if err != nil {
		return nil, err
	}
	var wt []string
	for _, w := range entry.Worktrees {
		wt = append(wt, w.ID)
	}
	inv, err := GetInventory(ctx, c, hostID)
	if err != nil {
		return nil, err
	}
	if a := inv.find(entry.ID); a != nil {
		return nil, fmt.Errorf("repository %s is already attached to host %s at %s; detach it first with auto-harness host repo rm %s %s", entry.ID, hostID, a.Path, hostID, entry.ID)
	}
	return rewrite(ctx, c, inv, hostID, func(inv *Inventory) ([]json.RawMessage, *Change) {
		ch := &Change{done: "attached", DryRun: dryRun, HostID: hostID, RepositoryID: entry.ID, Path: entry.Path, Repository: raw, WorktreeIDs: wt, FromVersion: inv.Version}
		return append(inv.raws(""), raw), ch
	}, func(inv *Inventory) (*Change, error) {
		a := inv.find(entry.ID)
		switch {
		case a == nil:
			return nil, nil
		case a.Path != entry.Path:
			return nil, fmt.Errorf("repository %s was attached to host %s at %s by another writer while this command was adding it", entry.ID, hostID, a.Path)
		}
		return &Change{done: "attached", ConvergedElsewhere: true, HostID: hostID, RepositoryID: a.ID, Path: a.Path, Repository: a.Raw, WorktreeIDs: a.Worktrees, ToVersion: inv.Version}, nil
	})
}

// Detach removes repository id from hostID's inventory (its worktrees go
// with it): the record exactly as read without that repository, every
// other member (providerAccounts above all) untouched and the version read
// kept. A repository not attached is refused, naming those that are; a 409
// re-reads and writes again (MaxInventoryWrites in all), and another
// writer's detach counts as done.
func Detach(ctx context.Context, c *autoharness.Client, hostID, id string, dryRun bool) (*Change, error) {
	inv, err := GetInventory(ctx, c, hostID)
	if err != nil {
		return nil, err
	}
	last := inv.find(id)
	if last == nil {
		return nil, fmt.Errorf("repository %s is not attached to host %s; attached repositories: %s", id, hostID, inv.ids())
	}
	return rewrite(ctx, c, inv, hostID, func(inv *Inventory) ([]json.RawMessage, *Change) {
		last = inv.find(id)
		ch := &Change{done: "detached", DryRun: dryRun, HostID: hostID, RepositoryID: id, Path: last.Path, Repository: last.Raw, WorktreeIDs: last.Worktrees, FromVersion: inv.Version}
		return inv.raws(id), ch
	}, func(inv *Inventory) (*Change, error) {
		if inv.find(id) != nil {
			return nil, nil
		}
		return &Change{done: "detached", ConvergedElsewhere: true, HostID: hostID, RepositoryID: id, Path: last.Path, Repository: last.Raw, WorktreeIDs: last.Worktrees, ToVersion: inv.Version}, nil
	})
}

// rewrite writes the repositories change makes of inv (unless the change
// is a dry run) until a write lands; after a 409 it reads the record
// again, and converged says whether another writer made the change
// already (a change) or a conflicting one (an error); MaxInventoryWrites
// writes refused, it gives up.
func rewrite(ctx context.Context, c *autoharness.Client, inv *Inventory, hostID string,
	change func(*Inventory) ([]json.RawMessage, *Change), converged func(*Inventory) (*Change, error)) (*Change, error) {
	for attempt := 1; ; attempt++ {
		repos, ch := change(inv)
		if ch.DryRun {
			return ch, nil
		}
		written, err := write(ctx, c, hostID, inv, repos)
		if err == nil {
			ch.Done, ch.ToVersion = true, written
			return ch, nil
		}
		if Refusal(err, http.StatusConflict) == nil {
			return nil, err
		}
		if attempt == MaxInventoryWrites {
			return nil, fmt.Errorf("inventory for host %s kept changing; gave up after %d attempts (run the command again)", hostID, MaxInventoryWrites)
		}
		if inv, err = GetInventory(ctx, c, hostID); err != nil {
			return nil, err
		}
		if ch, err := converged(inv); ch != nil || err != nil {
			return ch, err
		}
	}
}

// raws are the attached repositories' records as read, less the one of id
// ("" keeps them all).
func (inv *Inventory) raws(id string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(inv.Repositories)+1)
	for _, a := range inv.Repositories {
		if id == "" || a.ID != id {
			out = append(out, a.Raw)
		}
	}
	return out
}

// write puts inv with repos as hostID's inventory and returns the version
// the control plane answered with.
func write(ctx context.Context, c *autoharness.Client, hostID string, inv *Inventory, repos []json.RawMessage) (json.RawMessage, error) {
	body, err := inv.with(repos)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Version json.RawMessage `json:"version"`
	}
	if _, err := c.Decode(ctx, autoharness.Request{Method: "PUT", Path: inventoryPath(hostID), Body: body}, &answer); err != nil {
		return nil, err
	}
	if len(answer.Version) == 0 {
		return json.RawMessage("null"), nil
	}
	return answer.Version, nil
}
