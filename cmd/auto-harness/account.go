package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/operator"
	"github.com/metaharness/metaharness/internal/newfile"
)

// accountCmd groups the service-account commands.
type accountCmd struct {
	List   accountListCmd   `cmd:"" help:"List the service accounts (allowlisted fields only)."`
	Create accountCreateCmd `cmd:"" help:"Create a service account; its key, shown once, goes to a new file or to stdout."`
	Rm     accountRmCmd     `cmd:"" help:"Delete a service account."`
}

type accountListCmd struct {
	pageFlags
}

func (c *accountListCmd) run(a *app) error {
	if err := c.check(); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	return c.list(a, client, listing{path: "/auth/service-accounts", things: "service accounts", filter: operator.AccountFields, line: accountLine})
}

// accountLine is `<id>  <name>  <role>[  <boundHostId>][  <createdAt>]`.
func accountLine(item json.RawMessage) (string, error) {
	var s struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Role        string `json:"role"`
		BoundHostID string `json:"boundHostId"`
		CreatedAt   string `json:"createdAt"`
	}
	if err := json.Unmarshal(item, &s); err != nil {
		return "", err
	}
	return joinPresent(s.ID, s.Name, s.Role, s.BoundHostID, s.CreatedAt), nil
}

type accountCreateCmd struct {
	Name         string     `name:"name" required:"" placeholder:"NAME" help:"The account's name."`
	Role         string     `name:"role" required:"" placeholder:"ROLE" help:"read-only, author, operator, maintainer, agent or admin (the server checks it)."`
	BoundHost    *string    `name:"bound-host" placeholder:"HOSTID" help:"Bind the account to one host."`
	Repositories *string    `name:"repositories" placeholder:"ID,ID,..." help:"The repositories it may reach (allowedRepositoryIds)."`
	KeyFile      *string    `name:"key-file" placeholder:"PATH" help:"Write the key to this new file (mode 0600; never over an existing one)."`
	PrintKey     switchFlag `name:"print-key" help:"Print the key alone on stdout (the account's line goes to stderr)."`
	JSON         switchFlag `name:"json" help:"Print the account (allowlisted, without the key) as JSON."`
}

func (c *accountCreateCmd) run(a *app) error {
	if (c.KeyFile != nil) == bool(c.PrintKey) {
		return usageErrorf("exactly one of --key-file or --print-key is required")
	}
	if c.PrintKey && c.JSON {
		return usageErrorf("--json and --print-key cannot be combined: stdout is the key alone")
	}
	var repos []string
	if c.Repositories != nil {
		repos = strings.Split(*c.Repositories, ",")
		for _, r := range repos {
			if strings.TrimSpace(r) == "" {
				return usageErrorf("--repositories must be a comma-separated list with no empty entries")
			}
		}
	}
	if c.KeyFile != nil {
		if err := checkNewFile(*c.KeyFile); err != nil {
			return err
		}
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	body := struct {
		Name                 string   `json:"name"`
		Role                 string   `json:"role"`
		BoundHostID          *string  `json:"boundHostId,omitempty"`
		AllowedRepositoryIDs []string `json:"allowedRepositoryIds,omitempty"`
	}{c.Name, c.Role, c.BoundHost, repos}
	var created struct {
		Account json.RawMessage `json:"account"`
		APIKey  string          `json:"apiKey"`
	}
	if _, err := client.Decode(a.ctx, autoharness.Request{Method: "POST", Path: "/auth/service-accounts", Body: operator.MustEncode(body)}, &created); err != nil {
		return err
	}
	account, err := operator.Allowlisted(created.Account, operator.AccountFields)
	if err != nil {
		return fmt.Errorf("the answer to POST /auth/service-accounts: the account: %w", err)
	}
	id := field(account, "id")
	if created.APIKey == "" {
		return fmt.Errorf("the control plane created service account %s but answered without its key; remove it with auto-harness service-account rm %s", id, id)
	}
	if c.PrintKey {
		fmt.Fprintf(a.w.stderr, "service account %s created\n", id)
		fmt.Fprintln(a.w.stdout, created.APIKey)
		return nil
	}
	if err := newfile.Write(*c.KeyFile, []byte(created.APIKey+"\n"), 0o600); err != nil {
		return fmt.Errorf("service account %s was created, but its key could not be written to %s (%v); the key is shown only once and is lost: remove the account with auto-harness service-account rm %s and create another", id, *c.KeyFile, err, id)
	}
	if c.JSON {
		return printJSON(a.w.stdout, operator.Object(account))
	}
	fmt.Fprintf(a.w.stdout, "service account %s created\nkey written to %s\n", id, *c.KeyFile)
	return nil
}

// checkNewFile refuses a key file that exists (even as a dangling link)
// or whose directory does not: either would lose a key shown only once.
func checkNewFile(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return usageErrorf("--key-file %s already exists; refusing to overwrite it", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return usageErrorf("--key-file cannot be checked: %v", err)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usageErrorf("--key-file %s: its directory %s does not exist", path, dir)
	}
	return nil
}

type accountRmCmd struct {
	ID   string     `arg:"" name:"id" help:"The service account."`
	JSON switchFlag `name:"json" help:"Print {deleted, id} or, when refused, {deleted, id, dependencies}."`
}

func (c *accountRmCmd) run(a *app) error {
	return remove(a, "id", c.ID, "/auth/service-accounts/", bool(c.JSON), func(refused *autoharness.Error) error {
		raw, deps := operator.Dependencies(refused)
		if c.JSON {
			_ = printJSON(a.w.stdout, operator.Object([]operator.Member{
				{Key: "deleted", Value: operator.MustEncode(false)}, {Key: "id", Value: operator.MustEncode(c.ID)}, {Key: "dependencies", Value: operator.MustEncode(raw)},
			}))
			return reported{}
		}
		fmt.Fprintf(a.w.stderr, "error: %s\n", refused)
		for _, d := range deps {
			fmt.Fprintf(a.w.stderr, "  %s %s\n", d.Kind, d.ID)
		}
		return reported{}
	}, "service account %s deleted\n")
}
