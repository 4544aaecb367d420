package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/autoharness"
)

// SmokePrompt is what each smoke session is asked; the marker follows it.
const SmokePrompt = "Reply with exactly: "

// SmokeInput is one host smoke.
type SmokeInput struct {
	HostID string
	// RepoPath is the git checkout on the host (never inspected here) the
	// throwaway repository is attached at, its worktree under .worktrees/.
	RepoPath string
	// Providers are tried in order, each by id or name.
	Providers []string
	// Timeout bounds each provider's session: its own timeout, and the
	// wait for it, in whole seconds.
	Timeout int
}

// SmokeEnv is what a smoke runs with besides the client.
type SmokeEnv struct {
	Clock Clock
	// RandomHex is n random bytes in lower-case hex.
	RandomHex func(n int) (string, error)
	// Progress receives a line per step as it happens.
	Progress io.Writer
}

// SmokeResult is a smoke's outcome, as --json prints it.
type SmokeResult struct {
	HostID       string           `json:"hostId"`
	RepositoryID string           `json:"repositoryId,omitempty"`
	Providers    []ProviderResult `json:"providers"`
	Teardown     Teardown         `json:"teardown"`
	OK           bool             `json:"ok"`
	SetupError   string           `json:"setupError,omitempty"`
}

// ProviderResult is one provider's outcome. Reason names a failure:
// target_resolution_failed, create_failed, usage_limit,
// session_wait_failed, timeout, session_failed, logs_failed,
// marker_missing.
type ProviderResult struct {
	Provider  string
	Pass      bool
	Reason    string
	SessionID string
	// Status and ExitCode are the session's last record's, when one was
	// read (HasStatus).
	HasStatus bool
	Status    string
	ExitCode  *int
	Message   string
}

// MarshalJSON is {provider, pass, reason, sessionId, status, exitCode,
// message}, each only when it applies.
func (p ProviderResult) MarshalJSON() ([]byte, error) {
	m := []Member{{"provider", MustEncode(p.Provider)}, {"pass", MustEncode(p.Pass)}}
	if !p.Pass {
		m = append(m, Member{"reason", MustEncode(p.Reason)})
	}
	if p.SessionID != "" {
		m = append(m, Member{"sessionId", MustEncode(p.SessionID)})
	}
	if p.HasStatus {
		m = append(m, Member{"status", MustEncode(p.Status)}, Member{"exitCode", MustEncode(p.ExitCode)})
	}
	if !p.Pass {
		m = append(m, Member{"message", MustEncode(p.Message)})
	}
	return Object(m), nil
}

// Teardown is what the smoke's clean-up did.
type Teardown struct {
	OK                    bool     `json:"ok"`
	CancelledSessionIDs   []string `json:"cancelledSessionIds"`
	UncancelledSessionIDs []string `json:"uncancelledSessionIds"`
	Detached              bool     `json:"detached"`
	RepositoryDeleted     bool     `json:"repositoryDeleted"`
	// LeftoverRepositoryID is the repository left behind, when it was.
	LeftoverRepositoryID string `json:"leftoverRepositoryId,omitempty"`
}

// The teardown's delete: attempts, and the pause before attempt n+1,
// 250ms·n up to 2s.
const (
	deleteAttempts = 5
	deleteBackoff  = 250 * time.Millisecond
	maxBackoff     = 2 * time.Second
)

// smoke is one run's state.
type smoke struct {
	c        *autoharness.Client
	env      SmokeEnv
	in       SmokeInput
	repoID   string
	attached bool
	marker   string
	// live are the sessions this run created that may still run, in the
	// order they were created.
	live []string
}

// Smoke proves hostID can run a provider-routed session end to end: a
// throwaway repository attached with one worktree, one session per
// provider asked to reply with a random marker (a provider passes when its
// session completed with exit code 0 and its stdout holds the marker), and
// a teardown that always runs, even when ctx ends: cancel what still runs,
// detach, delete. What the teardown could not do is printed as the
// commands that finish it by hand.
func Smoke(ctx context.Context, c *autoharness.Client, env SmokeEnv, in SmokeInput) *SmokeResult {
	s := &smoke{c: c, env: env, in: in}
	res := &SmokeResult{HostID: in.HostID, Providers: []ProviderResult{}}
	if err := s.setup(ctx); err != nil {
		res.SetupError = err.Error()
		s.step(false, "setup: %s", res.SetupError)
	} else {
		for _, p := range in.Providers {
			res.Providers = append(res.Providers, s.provider(ctx, p))
		}
	}
	res.RepositoryID = s.repoID
	res.Teardown = s.teardown(context.WithoutCancel(ctx))
	res.OK = res.SetupError == "" && res.Teardown.OK
	for _, p := range res.Providers {
		res.OK = res.OK && p.Pass
	}
	return res
}

func (s *smoke) step(ok bool, format string, args ...any) {
	word := "ok  "
	if !ok {
		word = "FAIL  "
	}
	fmt.Fprintf(s.env.Progress, word+format+"\n", args...)
}

// setup creates the throwaway repository and attaches it, and draws the
// run's marker.
func (s *smoke) setup(ctx context.Context) error {
	suffix, err := s.env.RandomHex(6)
	if err != nil {
		return err
	}
	name := "smoke-" + suffix
	body := MustEncode(struct {
		Name          string `json:"name"`
		URL           string `json:"url"`
		DefaultBranch string `json:"defaultBranch"`
	}{name, "https://example.test/" + name + ".git", "main"})
	var repo struct {
		ID            string `json:"id"`
		DefaultBranch string `json:"defaultBranch"`
	}
	if _, err := s.c.Decode(ctx, autoharness.Request{Method: "POST", Path: "/repositories", Body: body}, &repo); err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	if repo.ID == "" {
		return fmt.Errorf("create repository %s: the answer names no id", name)
	}
	s.repoID = repo.ID
	s.step(true, "created repository %s (%s)", repo.ID, name)
	branch := repo.DefaultBranch
	if branch == "" {
		branch = "main"
	}
	entry := Entry{ID: repo.ID, Path: s.in.RepoPath, DefaultBranch: branch, Worktrees: []Worktree{
		{ID: name, Name: name, Path: s.in.RepoPath + "/.worktrees/" + name, Labels: []string{}},
	}}
	if _, err := Attach(ctx, s.c, s.in.HostID, entry, false); err != nil {
		return fmt.Errorf("attach repository %s to host %s: %w", repo.ID, s.in.HostID, err)
	}
	s.attached = true
	s.step(true, "attached repository %s to host %s at %s", repo.ID, s.in.HostID, s.in.RepoPath)
	marker, err := s.env.RandomHex(8)
	if err != nil {
		return err
	}
	s.marker = "AH_SMOKE_" + strings.ToUpper(marker)
	return nil
}

// errUsageLimit ends a wait whose session was requeued for its account's
// usage limit.
var errUsageLimit = errors.New("provider account hit its usage limit")

// provider runs one provider's session and judges it.
func (s *smoke) provider(ctx context.Context, p string) ProviderResult {
	res := ProviderResult{Provider: p}
	fail := func(reason, format string, args ...any) ProviderResult {
		res.Reason, res.Message = reason, fmt.Sprintf(format, args...)
		s.step(false, "provider %s: %s", p, res.Message)
		return res
	}
	target, err := Target(ctx, s.c, false, p)
	if err != nil {
		return fail("target_resolution_failed", "could not resolve target: %s", err)
	}
	created, err := s.c.CreateSession(ctx, autoharness.SessionInput{RepositoryID: s.repoID, Prompt: SmokePrompt + s.marker, Target: target, Timeout: s.in.Timeout})
	if err != nil {
		return fail("create_failed", "create session failed: %s", err)
	}
	id := created.ID
	res.SessionID = id
	s.live = append(s.live, id)
	s.step(true, "provider %s: created session %s", p, id)

	last := ""
	final, terminal, err := Wait(ctx, s.c, s.env.Clock, id, time.Duration(s.in.Timeout)*time.Second, func(rec *autoharness.Session) error {
		if rec.Status != last {
			fmt.Fprintf(s.env.Progress, "  session %s: %s\n", id, rec.Status)
			last = rec.Status
		}
		// Checked on every read, not on a change: a requeued session's
		// status may be queued again with nothing else to see.
		if !Terminal(rec.Status) && rec.ErrorCode == "usage_limit" {
			return errUsageLimit
		}
		return nil
	})
	if final != nil {
		res.HasStatus, res.Status, res.ExitCode = true, final.Status, final.ExitCode
	}
	switch {
	case errors.Is(err, errUsageLimit):
		s.cancel(ctx, id)
		return fail("usage_limit", "%s", errUsageLimit)
	case err != nil:
		// Left live: the teardown cancels it.
		return fail("session_wait_failed", "session wait failed: %s", err)
	case !terminal:
		s.cancel(ctx, id)
		hint := "session was still " + final.Status + " when the timeout elapsed"
		if final.Status == "queued" {
			hint = "session stayed queued — check that an online host advertises a ready execution profile for this provider's account (HARNESS_EXECUTION_PROFILES), and that something is running the scheduler (POST /scheduler/assign)"
		}
		res.Reason, res.Message = "timeout", hint
		s.step(false, "provider %s: timed out after %ds (%s)", p, s.in.Timeout, hint)
		return res
	}
	s.untrack(id)
	if !Succeeded(final) {
		msg := final.ErrorMessage
		if msg == "" {
			msg = "exitCode=n/a"
			if final.ExitCode != nil {
				msg = "exitCode=" + strconv.Itoa(*final.ExitCode)
			}
		}
		return fail("session_failed", "session %s (%s)", final.Status, msg)
	}
	stdout, err := s.stdout(ctx, id)
	if err != nil {
		return fail("logs_failed", "could not read the session's logs: %s", err)
	}
	if !strings.Contains(stdout, s.marker) {
		return fail("marker_missing", "completed but marker was not found in stdout")
	}
	res.Pass = true
	s.step(true, "provider %s: PASS", p)
	return res
}

// stdout is the text of the first page of session id's stdout log lines,
// joined by newlines.
func (s *smoke) stdout(ctx context.Context, id string) (string, error) {
	page, err := s.c.ReadPage(ctx, "/sessions/"+autoharness.PathEscape(id)+"/logs")
	if err != nil {
		return "", err
	}
	var lines []string
	for _, item := range page.Items {
		var l struct {
			Stream  string `json:"stream"`
			Content string `json:"content"`
		}
		if json.Unmarshal(item, &l) == nil && l.Stream == "stdout" {
			lines = append(lines, l.Content)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// cancel cancels session id, which then no longer runs (a 409: it had
// ended already); a cancel that fails leaves it to the teardown.
func (s *smoke) cancel(ctx context.Context, id string) {
	_, err := s.c.CancelSession(ctx, id)
	if err == nil || Refusal(err, http.StatusConflict) != nil {
		s.untrack(id)
		return
	}
	fmt.Fprintf(s.env.Progress, "  session %s: cancel failed (%s); teardown will retry it\n", id, err)
}

func (s *smoke) untrack(id string) {
	for i, l := range s.live {
		if l == id {
			s.live = append(s.live[:i], s.live[i+1:]...)
			return
		}
	}
}

// teardown cancels the sessions still live, detaches the repository and
// deletes it, and prints what it could not do as the commands that do it.
func (s *smoke) teardown(ctx context.Context) Teardown {
	t := Teardown{OK: true, CancelledSessionIDs: []string{}, UncancelledSessionIDs: []string{}}
	if s.repoID == "" {
		return t
	}
	for _, id := range s.live {
		_, err := s.c.CancelSession(ctx, id)
		switch {
		case err == nil:
			t.CancelledSessionIDs = append(t.CancelledSessionIDs, id)
			s.step(true, "teardown: cancelled session %s", id)
		case Refusal(err, http.StatusConflict) != nil:
			t.CancelledSessionIDs = append(t.CancelledSessionIDs, id)
			s.step(true, "teardown: session %s was already terminal", id)
		default:
			t.UncancelledSessionIDs = append(t.UncancelledSessionIDs, id)
			s.step(false, "teardown: cancel session %s failed: %s", id, err)
		}
	}
	attached := s.attached
	if attached {
		if _, err := Detach(ctx, s.c, s.in.HostID, s.repoID, false); err != nil {
			s.step(false, "teardown: detach repository %s failed: %s", s.repoID, err)
		} else {
			attached, t.Detached = false, true
			s.step(true, "teardown: detached repository %s from host %s", s.repoID, s.in.HostID)
		}
	}
	if attached {
		s.step(false, "teardown: repository %s not deleted: it is still attached to host %s", s.repoID, s.in.HostID)
	} else if err := s.delete(ctx); err != nil {
		s.step(false, "teardown: delete repository %s failed: %s", s.repoID, err)
	} else {
		t.RepositoryDeleted = true
		s.step(true, "teardown: deleted repository %s", s.repoID)
	}
	t.OK = !attached && t.RepositoryDeleted && len(t.UncancelledSessionIDs) == 0
	for _, id := range t.UncancelledSessionIDs {
		fmt.Fprintf(s.env.Progress, "leftover session %s — finish cleanup with:\n  auto-harness session cancel %s\n", id, id)
	}
	if !t.RepositoryDeleted {
		t.LeftoverRepositoryID = s.repoID
		fmt.Fprintf(s.env.Progress, "leftover repository %s — finish cleanup with:\n", s.repoID)
		if attached {
			fmt.Fprintf(s.env.Progress, "  auto-harness host repo rm %s %s\n", s.in.HostID, s.repoID)
		}
		fmt.Fprintf(s.env.Progress, "  auto-harness repo rm %s\n", s.repoID)
	}
	return t
}

// delete deletes the repository, again after a 409 (the delete's guard
// may read the inventory before the detach reached it) or a transient
// failure (no answer, a timeout, a 5xx), deleteAttempts in all; once a
// transient failure happened, a 404 means an earlier delete landed.
func (s *smoke) delete(ctx context.Context) error {
	transient := false
	for attempt := 1; ; attempt++ {
		_, err := s.c.Request(ctx, autoharness.Request{Method: "DELETE", Path: "/repositories/" + autoharness.PathEscape(s.repoID)})
		if err == nil || (transient && Refusal(err, http.StatusNotFound) != nil) {
			return nil
		}
		var refused *autoharness.Error
		isHTTP := errors.As(err, &refused)
		switch {
		case !isHTTP || refused.Status >= 500:
			transient = true
		case refused.Status != http.StatusConflict:
			return err
		}
		if attempt == deleteAttempts {
			return err
		}
		if serr := s.env.Clock.Sleep(ctx, min(deleteBackoff*time.Duration(attempt), maxBackoff)); serr != nil {
			return err
		}
	}
}
