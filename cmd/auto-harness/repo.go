package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/operator"
)

// repoCmd groups the repository commands.
type repoCmd struct {
	Add  repoAddCmd  `cmd:"" help:"Register a repository."`
	List repoListCmd `cmd:"" help:"List the repositories."`
	Rm   repoRmCmd   `cmd:"" help:"Delete a repository; a refusal names the next step for each record that blocks it."`
}

type repoAddCmd struct {
	Name          string     `name:"name" required:"" placeholder:"NAME" help:"Its name (a slug the control plane checks)."`
	URL           string     `name:"url" required:"" placeholder:"URL" help:"Its clone URL."`
	DefaultBranch *string    `name:"default-branch" placeholder:"BRANCH" help:"Its default branch (the server's default: main)."`
	JSON          switchFlag `name:"json" help:"Print the record as the server sent it."`
}

func (c *repoAddCmd) run(a *app) error {
	client, err := a.client()
	if err != nil {
		return err
	}
	body := struct {
		Name          string  `json:"name"`
		URL           string  `json:"url"`
		DefaultBranch *string `json:"defaultBranch,omitempty"`
	}{c.Name, c.URL, c.DefaultBranch}
	var repo struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	raw, err := client.Decode(a.ctx, autoharness.Request{Method: "POST", Path: "/repositories", Body: operator.MustEncode(body)}, &repo)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(a.w.stdout, raw)
	}
	fmt.Fprintf(a.w.stdout, "%s  %s\n", repo.ID, repo.Name)
	return nil
}

type repoListCmd struct {
	pageFlags
}

func (c *repoListCmd) run(a *app) error {
	if err := c.check(); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	return c.list(a, client, listing{path: "/repositories", things: "repositories", line: func(item json.RawMessage) (string, error) {
		var r struct {
			ID, Name, Status, URL string
		}
		if err := json.Unmarshal(item, &r); err != nil {
			return "", err
		}
		return joinPresent(r.ID, r.Name, r.Status, r.URL), nil
	}})
}

// joinPresent joins the first two fields and each further one that is
// not empty, two spaces apart.
func joinPresent(first, second string, more ...string) string {
	line := first + "  " + second
	for _, m := range more {
		if m != "" {
			line += "  " + m
		}
	}
	return line
}

type repoRmCmd struct {
	RepositoryID string     `arg:"" name:"repositoryId" help:"The repository."`
	JSON         switchFlag `name:"json" help:"Print {deleted, id} or, when refused, {deleted, dependencies, hints}."`
}

func (c *repoRmCmd) run(a *app) error {
	return remove(a, "repositoryId", c.RepositoryID, "/repositories/", bool(c.JSON), func(refused *autoharness.Error) error {
		raw, deps := operator.Dependencies(refused)
		hints := operator.Hints(c.RepositoryID, deps)
		if c.JSON {
			_ = printJSON(a.w.stdout, operator.Object([]operator.Member{
				{Key: "deleted", Value: operator.MustEncode(false)}, {Key: "dependencies", Value: operator.MustEncode(raw)}, {Key: "hints", Value: operator.MustEncode(hints)},
			}))
			return reported{}
		}
		fmt.Fprintf(a.w.stderr, "error: %s\n", refused)
		for _, h := range hints {
			fmt.Fprintf(a.w.stderr, "  %s\n", h)
		}
		return reported{}
	}, "repository %s deleted\n")
}

// remove deletes the record of id at prefix+id and prints that it did
// ("deleted" as printf's line, or {"deleted":true,"id":…}); a 409 is
// conflict's to tell.
func remove(a *app, label, id, prefix string, asJSON bool, conflict func(*autoharness.Error) error, deleted string) error {
	if err := checkID(label, id); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	_, err = client.Request(a.ctx, autoharness.Request{Method: "DELETE", Path: prefix + autoharness.PathEscape(id)})
	if refused := operator.Refusal(err, http.StatusConflict); refused != nil {
		return conflict(refused)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.w.stdout, operator.Object([]operator.Member{{Key: "deleted", Value: operator.MustEncode(true)}, {Key: "id", Value: operator.MustEncode(id)}}))
	}
	fmt.Fprintf(a.w.stdout, deleted, id)
	return nil
}
