package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/operator"
)

// hostCmd groups the fleet's host commands.
type hostCmd struct {
	List      hostListCmd      `cmd:"" help:"List the hosts: online or offline, and draining."`
	Drain     hostDrainCmd     `cmd:"" help:"Drain a host: it takes no new session; print the sessions still running."`
	Resume    hostResumeCmd    `cmd:"" help:"Resume a drained host (a host not draining is left as it is)."`
	Inventory hostInventoryCmd `cmd:"" help:"Read or replace a host's inventory record."`
	Repo      hostRepoCmd      `cmd:"" help:"Attach a repository to a host, or detach it, safely."`
	Smoke     hostSmokeCmd     `cmd:"" help:"Prove a host runs a provider-routed session end to end, then clean up."`
}

type hostListCmd struct {
	Online  switchFlag `name:"online" help:"Only the hosts online."`
	Offline switchFlag `name:"offline" help:"Only the hosts offline."`
	pageFlags
}

func (c *hostListCmd) run(a *app) error {
	if c.Online && c.Offline {
		return usageErrorf("--online and --offline are mutually exclusive")
	}
	if err := c.check(); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	online := ""
	switch {
	case bool(c.Online):
		online = "online"
	case bool(c.Offline):
		online = "offline"
	}
	return c.list(a, client, listing{path: "/hosts", things: "hosts", before: []string{"online", online}, line: func(item json.RawMessage) (string, error) {
		var h struct {
			HostID   string `json:"hostId"`
			Online   bool   `json:"online"`
			Draining bool   `json:"draining"`
		}
		if err := json.Unmarshal(item, &h); err != nil {
			return "", err
		}
		line := h.HostID + "  offline"
		if h.Online {
			line = h.HostID + "  online"
		}
		if h.Draining {
			line += "  draining"
		}
		return line, nil
	}})
}

// hostAction is a command that posts {"hostId": id} to a route (the id
// is never in the route itself).
type hostAction struct {
	HostID string     `arg:"" name:"hostId" help:"The host."`
	JSON   switchFlag `name:"json" help:"Print the answer as the server sent it."`
}

type hostDrainCmd struct{ hostAction }

func (c *hostDrainCmd) run(a *app) error {
	return c.post(a, "/hosts/drain", func(body json.RawMessage) error {
		var answer struct {
			RunningSessionIDs []string `json:"runningSessionIds"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return fmt.Errorf("the answer to POST /hosts/drain: %w", err)
		}
		fmt.Fprintf(a.w.stdout, "host %s is draining (%d session(s) still running)\n", c.HostID, len(answer.RunningSessionIDs))
		for _, id := range answer.RunningSessionIDs {
			fmt.Fprintf(a.w.stdout, "  %s\n", id)
		}
		return nil
	})
}

type hostResumeCmd struct{ hostAction }

func (c *hostResumeCmd) run(a *app) error {
	return c.post(a, "/hosts/resume", func(json.RawMessage) error {
		fmt.Fprintf(a.w.stdout, "host %s resumed (safe to run even if it was not draining)\n", c.HostID)
		return nil
	})
}

// post sends the host's id to path and prints the answer: as the server
// sent it with --json, else by human. A 409 means the host's connection
// changed while the control plane acted, which a hint after the error line
// says.
func (h *hostAction) post(a *app, path string, human func(json.RawMessage) error) error {
	if err := checkID("hostId", h.HostID); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	resp, err := client.Request(a.ctx, autoharness.Request{Method: "POST", Path: path, Body: operator.MustEncode(map[string]string{"hostId": h.HostID})})
	if operator.Refusal(err, http.StatusConflict) != nil {
		report(a.w.stderr, err)
		fmt.Fprintln(a.w.stderr, "hint: the host's connection changed mid-request; retrying is safe")
		return reported{}
	}
	if err != nil {
		return err
	}
	body := resp.Body
	if body == nil {
		body = json.RawMessage("{}")
	}
	if h.JSON {
		return printJSON(a.w.stdout, body)
	}
	return human(body)
}

type hostInventoryCmd struct {
	Get hostInventoryGetCmd `cmd:"" help:"Print a host's inventory: its version, repositories and provider accounts."`
	Set hostInventorySetCmd `cmd:"" help:"Replace a host's inventory with a document holding its version, sent as it is."`
}

type hostInventoryGetCmd struct {
	HostID string     `arg:"" name:"hostId" help:"The host."`
	JSON   switchFlag `name:"json" help:"Print the record as the server sent it."`
}

func (c *hostInventoryGetCmd) run(a *app) error {
	if err := checkID("hostId", c.HostID); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	inv, err := operator.GetInventory(a.ctx, client, c.HostID)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(a.w.stdout, inv.Raw)
	}
	out := a.w.stdout
	fmt.Fprintf(out, "version: %s\n", inv.Version)
	if len(inv.Repositories) == 0 {
		fmt.Fprintln(out, "repositories: (none)")
	} else {
		fmt.Fprintln(out, "repositories:")
	}
	for _, r := range inv.Repositories {
		fmt.Fprintf(out, "  %s  %s  (%d %s)\n", r.ID, r.Path, len(r.Worktrees), plural(len(r.Worktrees), "worktree", "worktrees"))
	}
	fmt.Fprintf(out, "provider accounts: %d\n", inv.ProviderAccounts)
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type hostInventorySetCmd struct {
	HostID string `arg:"" name:"hostId" help:"The host."`
	File   string `name:"file" required:"" placeholder:"PATH|-" help:"The whole new record (from inventory get --json), or - for stdin."`
}

func (c *hostInventorySetCmd) run(a *app) error {
	if err := checkID("hostId", c.HostID); err != nil {
		return err
	}
	if c.File == "-" {
		a.stdinUse = "host inventory set --file -"
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	doc, err := a.readDocument("--file", c.File)
	if err != nil {
		return err
	}
	if err := checkInventory(doc, c.HostID); err != nil {
		return err
	}
	client, err := a.connect(cfg)
	if err != nil {
		return err
	}
	var answer struct {
		Version json.RawMessage `json:"version"`
	}
	if _, err := client.Decode(a.ctx, autoharness.Request{Method: "PUT", Path: "/hosts/" + autoharness.PathEscape(c.HostID) + "/inventory", Body: doc}, &answer); err != nil {
		return err
	}
	fmt.Fprintf(a.w.stdout, "inventory for host %s set to version %s\n", c.HostID, answer.Version)
	return nil
}

// checkInventory refuses a document that is not a JSON object with an
// integer version: without one the control plane writes over whatever
// version it holds, with no conflict to tell.
func checkInventory(doc []byte, hostID string) error {
	if !json.Valid(doc) {
		return usageErrorf("--file must contain valid JSON")
	}
	members, err := operator.Members(doc)
	if err != nil {
		return usageErrorf("--file must contain a JSON object")
	}
	for _, m := range members {
		if m.Key == "version" && integer(m.Value) {
			return nil
		}
	}
	return usageErrorf(`--file has no integer "version": without it the control plane overwrites whatever version it holds, with no conflict check; start from auto-harness host inventory get %s --json and edit that`, hostID)
}

// integer reports whether raw is a JSON number of integral value.
func integer(raw json.RawMessage) bool {
	f, err := strconv.ParseFloat(string(raw), 64)
	return err == nil && raw[0] != '"' && !math.IsInf(f, 0) && f == math.Trunc(f)
}

type hostRepoCmd struct {
	Add hostRepoAddCmd `cmd:"" help:"Attach a registered repository to a host (read-modify-write of its inventory)."`
	Rm  hostRepoRmCmd  `cmd:"" help:"Detach a repository from a host, its worktrees with it."`
}

type hostRepoAddCmd struct {
	HostID        string     `arg:"" name:"hostId" help:"The host."`
	RepositoryID  string     `arg:"" name:"repositoryId" help:"The repository (auto-harness repo add registers one)."`
	Path          string     `name:"path" required:"" placeholder:"PATH" help:"The repository's checkout on the host."`
	Worktree      []string   `name:"worktree" sep:"none" placeholder:"ID=PATH" help:"A worktree of it on the host (repeatable)."`
	DefaultBranch *string    `name:"default-branch" placeholder:"BRANCH" help:"Its default branch (default: the repository's own)."`
	DryRun        switchFlag `name:"dry-run" help:"Print what would be attached; write nothing."`
	JSON          switchFlag `name:"json" help:"Print the change as JSON."`
}

func (c *hostRepoAddCmd) run(a *app) error {
	if err := checkIDs("hostId", c.HostID, "repositoryId", c.RepositoryID); err != nil {
		return err
	}
	worktrees, err := parseWorktrees(c.Worktree)
	if err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	var repo struct {
		DefaultBranch string `json:"defaultBranch"`
	}
	_, err = client.Decode(a.ctx, autoharness.Request{Path: "/repositories/" + autoharness.PathEscape(c.RepositoryID)}, &repo)
	if operator.Refusal(err, http.StatusNotFound) != nil {
		return fmt.Errorf("repository %s not found (register it first with auto-harness repo add)", c.RepositoryID)
	}
	if err != nil {
		return err
	}
	entry := operator.Entry{ID: c.RepositoryID, Path: c.Path, DefaultBranch: repo.DefaultBranch, Worktrees: worktrees}
	if c.DefaultBranch != nil {
		entry.DefaultBranch = *c.DefaultBranch
	}
	ch, err := operator.Attach(a.ctx, client, c.HostID, entry, bool(c.DryRun))
	if err != nil {
		return err
	}
	return printChange(a, ch, bool(c.JSON), changeWords{
		converged: "repository %s was already attached to host %s by another writer at the same path (now at version %s)",
		done:      "attached", would: "would attach", to: "to", worktrees: "worktrees",
	})
}

// changeWords tell an attach or a detach.
type changeWords struct {
	// converged is the line of another writer's same change: a format of
	// the repository, the host and the version now.
	converged       string
	done, would, to string // "attached", "would attach", "to"
	worktrees       string // what the worktrees' line says of them
}

// printChange prints ch as JSON, or as its lines: what was (or would be)
// done, the worktrees with it, the version it moved from and to.
func printChange(a *app, ch *operator.Change, asJSON bool, w changeWords) error {
	if asJSON {
		return printValue(a.w.stdout, ch)
	}
	out := a.w.stdout
	if ch.ConvergedElsewhere {
		fmt.Fprintf(out, w.converged+"\n", ch.RepositoryID, ch.HostID, ch.ToVersion)
		return nil
	}
	verb := w.done
	if ch.DryRun {
		verb = w.would
	}
	fmt.Fprintf(out, "%s repository %s (%s) %s host %s\n", verb, ch.RepositoryID, ch.Path, w.to, ch.HostID)
	if len(ch.WorktreeIDs) > 0 {
		fmt.Fprintf(out, "  %s: %s\n", w.worktrees, strings.Join(ch.WorktreeIDs, ", "))
	}
	if !ch.DryRun {
		fmt.Fprintf(out, "version %s → %s\n", ch.FromVersion, ch.ToVersion)
	}
	return nil
}

// parseWorktrees reads --worktree ID=PATH values (split at the first "=",
// so a path may hold one), each id once.
func parseWorktrees(values []string) ([]operator.Worktree, error) {
	out := []operator.Worktree{}
	seen := map[string]bool{}
	for _, v := range values {
		id, path, ok := strings.Cut(v, "=")
		if !ok || id == "" || path == "" {
			return nil, usageErrorf("--worktree must be <id>=<path>, got: %s", v)
		}
		if seen[id] {
			return nil, usageErrorf("--worktree id given more than once: %s", id)
		}
		seen[id] = true
		out = append(out, operator.Worktree{ID: id, Name: id, Path: path, Labels: []string{}})
	}
	return out, nil
}

// checkIDs is checkID of each label and id pair.
func checkIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := checkID(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

type hostRepoRmCmd struct {
	HostID       string     `arg:"" name:"hostId" help:"The host."`
	RepositoryID string     `arg:"" name:"repositoryId" help:"The repository to detach."`
	DryRun       switchFlag `name:"dry-run" help:"Print what would be removed; write nothing."`
	JSON         switchFlag `name:"json" help:"Print the change as JSON."`
}

func (c *hostRepoRmCmd) run(a *app) error {
	if err := checkIDs("hostId", c.HostID, "repositoryId", c.RepositoryID); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	ch, err := operator.Detach(a.ctx, client, c.HostID, c.RepositoryID, bool(c.DryRun))
	if err != nil {
		return err
	}
	return printChange(a, ch, bool(c.JSON), changeWords{
		converged: "repository %s was already removed from host %s by another writer (now at version %s)",
		done:      "removed", would: "would remove", to: "from", worktrees: "worktrees removed with it",
	})
}
