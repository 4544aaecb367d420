package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/operator"
)

// sessionCmd groups the session commands.
type sessionCmd struct {
	Create sessionCreateCmd `cmd:"" help:"Create a session on a provider or a command, by id or name; --wait follows it to its end."`
	Get    sessionGetCmd    `cmd:"" help:"Print a session."`
	Logs   sessionLogsCmd   `cmd:"" help:"Print one bounded page of a session's log."`
	Cancel sessionCancelCmd `cmd:"" help:"Cancel a queued or running session."`
}

// The session's timeout create sends when --timeout is not given (the
// control plane requires one and sets none), and the longest --wait-timeout.
const (
	defaultSessionTimeout = 600
	maxWaitTimeout        = 1e9
)

type sessionCreateCmd struct {
	Repo          string     `name:"repo" required:"" placeholder:"REPOSITORYID" help:"The repository (its id)."`
	Provider      *string    `name:"provider" placeholder:"ID|NAME" help:"Run it on this provider."`
	Command       *string    `name:"command" placeholder:"ID|NAME" help:"Run it with this command."`
	Prompt        string     `name:"prompt" required:"" placeholder:"TEXT" help:"The task."`
	Timeout       *int       `name:"timeout" placeholder:"SECONDS" help:"The session's own timeout (default 600)."`
	Ref           *string    `name:"ref" placeholder:"REF" help:"The git ref it starts from."`
	ConcurrencyID *string    `name:"concurrency-id" placeholder:"ID" help:"Sessions of one identity run one at a time."`
	Wait          switchFlag `name:"wait" help:"Follow it to a terminal status (changes on stderr, the record on stdout); exit 0 only when it completed with exit code 0."`
	WaitTimeout   *float64   `name:"wait-timeout" placeholder:"SECONDS" help:"Give up waiting after this long, never cancelling it (default: --timeout)."`
	JSON          switchFlag `name:"json" help:"Print the record as the server sent it."`
}

func (c *sessionCreateCmd) run(a *app) error {
	if (c.Provider == nil) == (c.Command == nil) {
		return usageErrorf("exactly one of --provider or --command is required")
	}
	if c.WaitTimeout != nil && !c.Wait {
		return usageErrorf("--wait-timeout requires --wait")
	}
	timeout := defaultSessionTimeout
	if c.Timeout != nil {
		timeout = *c.Timeout
	}
	if timeout <= 0 {
		return usageErrorf("--timeout must be a positive number of seconds")
	}
	wait := float64(timeout)
	if c.WaitTimeout != nil {
		wait = *c.WaitTimeout
		if math.IsNaN(wait) || wait <= 0 || wait > maxWaitTimeout {
			return usageErrorf("--wait-timeout must be a positive number of seconds, at most %d", int(maxWaitTimeout))
		}
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	value, isCommand := c.Provider, false
	if c.Command != nil {
		value, isCommand = c.Command, true
	}
	target, err := operator.Target(a.ctx, client, isCommand, *value)
	if err != nil {
		return err
	}
	in := autoharness.SessionInput{RepositoryID: c.Repo, Prompt: c.Prompt, Target: target, Timeout: timeout}
	if c.Ref != nil {
		in.Ref = *c.Ref
	}
	if c.ConcurrencyID != nil {
		in.ConcurrencyID = *c.ConcurrencyID
	}
	s, err := client.CreateSession(a.ctx, in)
	if err != nil {
		return err
	}
	if !c.Wait {
		return printSession(a, s, bool(c.JSON))
	}
	last := ""
	final, terminal, err := operator.Wait(a.ctx, client, a.w.clock, s.ID, time.Duration(wait*float64(time.Second)), func(rec *autoharness.Session) error {
		if rec.Status != last {
			fmt.Fprintf(a.w.stderr, "session %s: %s\n", s.ID, rec.Status)
			last = rec.Status
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !terminal {
		fmt.Fprintf(a.w.stderr, "session %s is still running after %ss; not cancelling it\n", s.ID, strconv.FormatFloat(wait, 'f', -1, 64))
	}
	if err := printSession(a, final, bool(c.JSON)); err != nil {
		return err
	}
	if !terminal || !operator.Succeeded(final) {
		return reported{}
	}
	return nil
}

// printSession prints s as the server sent it, or as its one line:
// `<id>  <status>[  exitCode=<n>][  errorCode=<c>][  errorMessage=<m>]`.
func printSession(a *app, s *autoharness.Session, asJSON bool) error {
	if asJSON {
		return printJSON(a.w.stdout, s.Raw)
	}
	line := s.ID + "  " + s.Status
	if s.ExitCode != nil {
		line += "  exitCode=" + strconv.Itoa(*s.ExitCode)
	}
	if s.ErrorCode != "" {
		line += "  errorCode=" + s.ErrorCode
	}
	if s.ErrorMessage != "" {
		line += "  errorMessage=" + s.ErrorMessage
	}
	fmt.Fprintln(a.w.stdout, line)
	return nil
}

type sessionGetCmd struct {
	SessionID string     `arg:"" name:"sessionId" help:"The session."`
	JSON      switchFlag `name:"json" help:"Print the record as the server sent it."`
}

func (c *sessionGetCmd) run(a *app) error {
	return onSession(a, c.SessionID, bool(c.JSON), (*autoharness.Client).GetSession)
}

type sessionCancelCmd struct {
	SessionID string     `arg:"" name:"sessionId" help:"The session."`
	JSON      switchFlag `name:"json" help:"Print the record as the server sent it."`
}

func (c *sessionCancelCmd) run(a *app) error {
	return onSession(a, c.SessionID, bool(c.JSON), (*autoharness.Client).CancelSession)
}

// onSession calls do on session id and prints the session it answers.
func onSession(a *app, id string, asJSON bool, do func(*autoharness.Client, context.Context, string) (*autoharness.Session, error)) error {
	client, err := sessionClient(a, id)
	if err != nil {
		return err
	}
	s, err := do(client, a.ctx, id)
	if err != nil {
		return err
	}
	return printSession(a, s, asJSON)
}

// sessionClient checks a session id and makes the client.
func sessionClient(a *app, id string) (*autoharness.Client, error) {
	if err := checkID("sessionId", id); err != nil {
		return nil, err
	}
	return a.client()
}

// defaultLogLimit is the logs route's own page size.
const defaultLogLimit = 1000

type sessionLogsCmd struct {
	SessionID string     `arg:"" name:"sessionId" help:"The session."`
	Limit     *int       `name:"limit" placeholder:"N" help:"At most N lines (the server's default: 1000)."`
	Cursor    *string    `name:"cursor" placeholder:"TIMESTAMP" help:"Only lines after this timestamp (the hint's; every line of that exact timestamp is skipped)."`
	JSON      switchFlag `name:"json" help:"Print the page as the server sent it."`
}

func (c *sessionLogsCmd) run(a *app) error {
	if err := positive("--limit", c.Limit); err != nil {
		return err
	}
	client, err := sessionClient(a, c.SessionID)
	if err != nil {
		return err
	}
	limit, sent := defaultLogLimit, ""
	if c.Limit != nil {
		limit, sent = *c.Limit, strconv.Itoa(*c.Limit)
	}
	since := ""
	if c.Cursor != nil {
		since = *c.Cursor
	}
	page, err := client.ReadPage(a.ctx, "/sessions/"+autoharness.PathEscape(c.SessionID)+"/logs"+autoharness.Query("limit", sent, "since", since))
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(a.w.stdout, page.Raw)
	}
	if len(page.Items) == 0 {
		fmt.Fprintln(a.w.stdout, "(no logs)")
	}
	last := ""
	for _, item := range page.Items {
		var l struct {
			Timestamp string `json:"timestamp"`
			Stream    string `json:"stream"`
			Content   string `json:"content"`
		}
		if err := json.Unmarshal(item, &l); err != nil {
			return fmt.Errorf("a line of the session's log: %w", err)
		}
		fmt.Fprintf(a.w.stdout, "%s  [%s]  %s\n", l.Timestamp, l.Stream, strings.TrimRight(l.Content, "\r\n"))
		last = l.Timestamp
	}
	if len(page.Items) == limit {
		fmt.Fprintf(a.w.stdout, "more logs may be available; pass --cursor %s to continue\n", last)
	}
	return nil
}
