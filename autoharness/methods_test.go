package autoharness

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const (
	sessionJSON = `{"id":"s/1","repositoryId":"repo-1","status":"completed","url":"https://ui/sessions/s%2F1","created":true,"exitCode":0,"errorCode":null,"result":{"summary":"<done> & dusted"},"completedAt":"2026-01-02T03:04:05Z"}`
	drainJSON   = `{"operationId":"d1","repositoryId":"repo-1","status":"draining","statusUrl":"/api/v1/repositories/repo-1/session-drains/d1","requestedAt":"t0","updatedAt":"t1","deadlineAt":"t2","queuedCount":2,"runningCount":1,"cancelledCount":0}`
	repoJSON    = `{"id":"repo-1","name":"filaments","url":"https://example.test/f.git","defaultBranch":"main","status":"paused"}`
)

// TestMethodsSendExactly: each method's request, exactly (method, URL,
// body, headers), and the record it returns, kept as the server sent it.
func TestMethodsSendExactly(t *testing.T) {
	five := 5
	for _, c := range []struct {
		name string
		call func(*Client) (any, error)
		want string // the request line
		rep  reply
	}{
		{"CreateSession", func(c *Client) (any, error) {
			return c.CreateSession(bg, SessionInput{
				RepositoryID: "repo-1", Prompt: "Review <the> changes & more", Target: &TargetRef{ProviderID: "codex"},
				Fallbacks: []TargetRef{{CommandID: "cmd-2"}}, Timeout: 1800, Ref: "main", ConcurrencyID: "github-7",
				QueueTTLSeconds: 60, Priority: &five, RequiredLabels: []string{"gpu"}, Metadata: json.RawMessage(`{"b":1,"a":"x"}`), Source: "api",
			})
		}, `POST https://harness.test/api/v1/sessions {"repositoryId":"repo-1","prompt":"Review <the> changes & more","target":{"providerId":"codex"},"fallbacks":[{"commandId":"cmd-2"}],"timeout":1800,"ref":"main","concurrencyId":"github-7","queueTtlSeconds":60,"priority":5,"requiredLabels":["gpu"],"metadata":{"b":1,"a":"x"},"source":"api"}`,
			reply{201, sessionJSON, nil}},
		{"CreateSession with nothing but a prompt", func(c *Client) (any, error) {
			return c.CreateSession(bg, SessionInput{Prompt: "p"})
		}, `POST https://harness.test/api/v1/sessions {"prompt":"p"}`, reply{201, sessionJSON, nil}},
		{"GetSession", func(c *Client) (any, error) { return c.GetSession(bg, "s/1") },
			`GET https://harness.test/api/v1/sessions/s%2F1`, reply{200, sessionJSON, nil}},
		{"CancelSession", func(c *Client) (any, error) { return c.CancelSession(bg, "service:1") },
			`POST https://harness.test/api/v1/sessions/service%3A1/cancel`, reply{200, sessionJSON, nil}},
		{"ResumeSession without input", func(c *Client) (any, error) { return c.ResumeSession(bg, "s1", nil) },
			`POST https://harness.test/api/v1/sessions/s1/resume`, reply{201, sessionJSON, nil}},
		{"ResumeSession", func(c *Client) (any, error) {
			return c.ResumeSession(bg, "s1", &ResumeInput{Prompt: "retry", Priority: &five})
		},
			`POST https://harness.test/api/v1/sessions/s1/resume {"prompt":"retry","priority":5}`, reply{201, sessionJSON, nil}},
		{"ListSessions", func(c *Client) (any, error) {
			return c.ListSessions(bg, SessionFilter{ScheduleID: "sc", ConcurrencyID: "c i", Cursor: "a&b", Limit: 50, Sort: "oldest", Source: "api", HostID: "h", RepositoryID: "repo-1", Status: "running"})
		}, `GET https://harness.test/api/v1/sessions?status=running&repositoryId=repo-1&hostId=h&source=api&sort=oldest&limit=50&cursor=a%26b&concurrencyId=c%20i&scheduleId=sc`,
			reply{200, `{"items":[{"id":"a"}],"nextCursor":"n"}`, nil}},
		{"ListSessions unfiltered", func(c *Client) (any, error) { return c.ListSessions(bg, SessionFilter{}) },
			`GET https://harness.test/api/v1/sessions`, reply{200, `{"items":[]}`, nil}},
		{"StartSessionDrain", func(c *Client) (any, error) { return c.StartSessionDrain(bg, RepositoryByID("repo-1"), "") },
			`POST https://harness.test/api/v1/repositories/repo-1/session-drains`, reply{202, drainJSON, nil}},
		{"GetSessionDrain", func(c *Client) (any, error) { return c.GetSessionDrain(bg, RepositoryByID("repo/1"), "d1") },
			`GET https://harness.test/api/v1/repositories/repo%2F1/session-drains/d1`, reply{200, drainJSON, nil}},
		{"ReleaseSessionDrain", func(c *Client) (any, error) { return c.ReleaseSessionDrain(bg, RepositoryByID("repo-1"), "d1") },
			`POST https://harness.test/api/v1/repositories/repo-1/session-drains/d1/release`, reply{200, drainJSON, nil}},
		{"ListRepositories", func(c *Client) (any, error) { return c.ListRepositories(bg, PageOptions{Limit: 50, Cursor: "c/1"}) },
			`GET https://harness.test/api/v1/repositories?limit=50&cursor=c%2F1`, reply{200, `{"items":[` + repoJSON + `]}`, nil}},
		{"ListRepositories first page", func(c *Client) (any, error) { return c.ListRepositories(bg, PageOptions{}) },
			`GET https://harness.test/api/v1/repositories`, reply{200, `{"items":[]}`, nil}},
		{"ReadPage", func(c *Client) (any, error) {
			return c.ReadPage(bg, "/hosts"+Query("online", "offline", "limit", "", "cursor", "h 9"))
		},
			`GET https://harness.test/api/v1/hosts?online=offline&cursor=h%209`, reply{200, `{"items":[{"hostId":"h"}],"nextCursor":"h"}`, nil}},
		{"PauseRepository", func(c *Client) (any, error) { return c.PauseRepository(bg, "repo-1") },
			`POST https://harness.test/api/v1/repositories/repo-1/pause`, reply{200, repoJSON, nil}},
		{"DrainRepository", func(c *Client) (any, error) { return c.DrainRepository(bg, "repo-1") },
			`POST https://harness.test/api/v1/repositories/repo-1/drain`, reply{200, repoJSON, nil}},
		{"ActivateRepository", func(c *Client) (any, error) { return c.ActivateRepository(bg, "repo-1") },
			`POST https://harness.test/api/v1/repositories/repo-1/activate`, reply{200, repoJSON, nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			method, rest, _ := strings.Cut(c.want, " ")
			u, _, _ := strings.Cut(rest, " ")
			rec := newRecorder(t, routes{method + " " + strings.TrimPrefix(u, "https://harness.test"): c.rep})
			got, err := c.call(client(t, rec))
			if err != nil {
				t.Fatal(err)
			}
			if lines := rec.lines(); len(lines) != 1 || lines[0] != c.want {
				t.Errorf("sent\n%s\nwant\n%s", strings.Join(lines, "\n"), c.want)
			}
			h := rec.requests()[0].Header
			if h.Get("Authorization") != "Bearer k" || h.Get("Accept") != "application/json" {
				t.Errorf("headers %v", h)
			}
			if body := rec.requests()[0].Body; (body != "") != (h.Get("Content-Type") == "application/json") {
				t.Errorf("content type %q with body %q: only a body has one", h.Get("Content-Type"), body)
			}
			if h.Get("Idempotency-Key") != "" {
				t.Errorf("an idempotency key nobody gave: %q", h.Get("Idempotency-Key"))
			}
			// Printed without HTML escapes (json.Marshal would add them),
			// the record is the server's bytes.
			printed, err := Encode(got)
			if err != nil || string(printed) != c.rep.body {
				t.Errorf("the record prints as\n%s (%v)\nwant the server's bytes\n%s", printed, err, c.rep.body)
			}
		})
	}
}

func TestRecordFields(t *testing.T) {
	rec := newRecorder(t, routes{
		"GET /api/v1/sessions/s":                      {200, sessionJSON, nil},
		"GET /api/v1/repositories/r/session-drains/d": {200, drainJSON, nil},
		"POST /api/v1/repositories/r/pause":           {200, repoJSON, nil},
		"POST /api/v1/repositories/r/session-drains":  {202, drainJSON, nil},
		"GET /api/v1/sessions/dup":                    {200, `{"id":"a","id":"b"}`, nil},
		"GET /api/v1/sessions/empty":                  {200, ``, nil},
		"GET /api/v1/sessions/typed":                  {200, `{"id":1}`, nil},
	})
	c := client(t, rec)
	s, err := c.GetSession(bg, "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "s/1" || s.RepositoryID != "repo-1" || s.Status != "completed" || s.URL != "https://ui/sessions/s%2F1" || !s.Created ||
		s.ExitCode == nil || *s.ExitCode != 0 || s.ErrorCode != "" || s.CompletedAt != "2026-01-02T03:04:05Z" {
		t.Errorf("session %+v", s)
	}
	d, err := c.GetSessionDrain(bg, RepositoryByID("r"), "d")
	if err != nil {
		t.Fatal(err)
	}
	if d.OperationID != "d1" || d.Status != DrainDraining || d.Terminal() || d.QueuedCount != 2 || d.RunningCount != 1 || d.CancelledCount != 0 ||
		d.StatusURL != "/api/v1/repositories/repo-1/session-drains/d1" || d.DeadlineAt != "t2" {
		t.Errorf("drain %+v", d)
	}
	r, err := c.PauseRepository(bg, "r")
	if err != nil || r.ID != "repo-1" || r.Name != "filaments" || r.DefaultBranch != "main" || r.Status != "paused" {
		t.Errorf("repository %+v %v", r, err)
	}
	if _, err := c.StartSessionDrain(bg, RepositoryByID("r"), "deploy-7"); err != nil {
		t.Fatal(err)
	}
	if k := rec.requests()[3].Header.Get("Idempotency-Key"); k != "deploy-7" {
		t.Errorf("idempotency key %q", k)
	}
	for id, want := range map[string]string{
		"dup":   `autoharness: the answer to GET /sessions/dup: the key "id" is given twice in the top-level object; give each key once`,
		"empty": `autoharness: GET /sessions/empty answered HTTP 200 without a JSON record`,
		"typed": `autoharness: the answer to GET /sessions/typed: json: cannot unmarshal number into Go struct field Session.id of type string`,
	} {
		if _, err := c.GetSession(bg, id); err == nil || err.Error() != want {
			t.Errorf("GetSession(%s): %v\nwant %s", id, err, want)
		}
	}
}

// TestDecode: a route the package has no method of, decoded as its
// records are (a key twice refused), its body kept as sent.
func TestDecode(t *testing.T) {
	rec := newRecorder(t, routes{
		"PUT /api/v1/hosts/h/inventory": {200, `{"version":3, "hostId":"h"}`, nil},
		"GET /api/v1/hosts/dup":         {200, `{"version":3,"version":4}`, nil},
	})
	c := client(t, rec)
	var v struct {
		Version int `json:"version"`
	}
	raw, err := c.Decode(bg, Request{Method: "PUT", Path: "/hosts/h/inventory", Body: []byte(`{}`)}, &v)
	if err != nil || v.Version != 3 || string(raw) != `{"version":3, "hostId":"h"}` {
		t.Errorf("Decode: %v, %+v, %s", err, v, raw)
	}
	if _, err := c.Decode(bg, Request{Path: "/hosts/dup"}, &v); err == nil || !strings.Contains(err.Error(), `the key "version" is given twice`) {
		t.Errorf("Decode of a key given twice: %v", err)
	}
}

// TestIdsAreChecked: an id that names no record ("", ".", "..") is refused
// before any request.
func TestIdsAreChecked(t *testing.T) {
	rec := newRecorder(t, okay)
	c := client(t, rec)
	for _, id := range []string{"", ".", ".."} {
		for name, call := range map[string]func() error{
			"GetSession":         func() error { _, err := c.GetSession(bg, id); return err },
			"CancelSession":      func() error { _, err := c.CancelSession(bg, id); return err },
			"ResumeSession":      func() error { _, err := c.ResumeSession(bg, id, nil); return err },
			"PauseRepository":    func() error { _, err := c.PauseRepository(bg, id); return err },
			"DrainRepository":    func() error { _, err := c.DrainRepository(bg, id); return err },
			"ActivateRepository": func() error { _, err := c.ActivateRepository(bg, id); return err },
			"StartSessionDrain":  func() error { _, err := c.StartSessionDrain(bg, RepositoryByID(id), ""); return err },
			"GetSessionDrain":    func() error { _, err := c.GetSessionDrain(bg, RepositoryByID("r"), id); return err },
			"ReleaseSessionDrain": func() error {
				_, err := c.ReleaseSessionDrain(bg, RepositoryByID(id), "d")
				return err
			},
			"WaitForSessionDrain": func() error {
				_, err := c.WaitForSessionDrain(bg, RepositoryByID("r"), id, WaitOptions{PollInterval: 1, Timeout: 1})
				return err
			},
		} {
			if err := call(); err == nil || !strings.HasPrefix(err.Error(), "autoharness: a ") {
				t.Errorf("%s(%q): %v", name, id, err)
			}
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("%d requests sent for ids that name nothing", n)
	}
}

// catalogues answers /providers and /commands (one page each, or the
// pages given) and /repositories, counting each listing.
func catalogues(t *testing.T) *recorder {
	return newRecorder(t, routes{
		"GET /api/v1/providers?limit=100":                  {200, `{"items":[{"id":"prov-1","name":"codex"},{"id":"prov-2","name":"claude"},{"id":"prov-3","name":"twin"},{"id":"prov-4","name":"twin"}]}`, nil},
		"GET /api/v1/commands?limit=100":                   {200, `{"items":[{"id":"cmd-1","name":"claude-print-plan"},{"id":"cmd-2","name":"mh-claude"},{"id":"cmd-3","name":"dup"},{"id":"cmd-4","name":"dup"},{"id":"cmd-5","name":"dup"}]}`, nil},
		"GET /api/v1/repositories":                         {200, `{"items":[{"id":"repo-1","name":"voucha/filaments"}],"nextCursor":"c 2"}`, nil},
		"GET /api/v1/repositories?cursor=c%202":            {200, `{"items":[{"id":"repo-2","name":"other"},{"id":"repo-3","name":"same"},{"id":"repo-4","name":"same"}]}`, nil},
		"POST /api/v1/sessions":                            {201, sessionJSON, nil},
		"POST /api/v1/sessions/s1/resume":                  {201, sessionJSON, nil},
		"GET /api/v1/repositories/repo-2/session-drains/d": {200, drainJSON, nil},
	})
}

func paths(rec *recorder) []string {
	var out []string
	for _, s := range rec.requests() {
		method, rest, _ := strings.Cut(s.line(), " ")
		u, _, _ := strings.Cut(rest, " ")
		out = append(out, method+" "+strings.TrimPrefix(u, "https://harness.test/api/v1"))
	}
	return out
}

func TestNameResolution(t *testing.T) {
	t.Run("every reference an id: no listing", func(t *testing.T) {
		rec := catalogues(t)
		_, err := client(t, rec).CreateSession(bg, SessionInput{RepositoryID: "repo-1", Prompt: "p", Target: &TargetRef{ProviderID: "codex"},
			Fallbacks: []TargetRef{{CommandID: "c"}, {ProviderID: "p", ProviderName: "ignored"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.lines(); len(got) != 1 || !strings.HasSuffix(got[0], `"target":{"providerId":"codex"},"fallbacks":[{"commandId":"c"},{"providerId":"p","providerName":"ignored"}]}`) {
			t.Errorf("sent %v", got)
		}
	})
	t.Run("names: one listing per catalogue, then the repository", func(t *testing.T) {
		rec := catalogues(t)
		_, err := client(t, rec).CreateSession(bg, SessionInput{RepositoryName: "voucha/filaments", Prompt: "p", Target: &TargetRef{ProviderName: "codex"},
			Fallbacks: []TargetRef{{CommandName: "claude-print-plan"}, {ProviderName: "claude"}, {CommandName: "mh-claude"}, {ProviderName: "codex", CommandName: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"GET /providers?limit=100", "GET /commands?limit=100", "GET /repositories", "GET /repositories?cursor=c%202", "POST /sessions"}
		if got := paths(rec); !slices.Equal(got, want) {
			t.Errorf("requests %v, want %v", got, want)
		}
		body := rec.requests()[4].Body
		if body != `{"repositoryId":"repo-1","prompt":"p","target":{"providerId":"prov-1"},"fallbacks":[{"commandId":"cmd-1"},{"providerId":"prov-2"},{"commandId":"cmd-2"},{"providerId":"prov-1"}]}` {
			t.Errorf("body %s", body)
		}
	})
	t.Run("an id beside a name wins over the name", func(t *testing.T) {
		rec := catalogues(t)
		if _, err := client(t, rec).CreateSession(bg, SessionInput{RepositoryID: "r", RepositoryName: "voucha/filaments", Prompt: "p"}); err != nil {
			t.Fatal(err)
		}
		if got := paths(rec); !slices.Equal(got, []string{"POST /sessions"}) {
			t.Errorf("requests %v", got)
		}
	})
	t.Run("resume resolves only with a target", func(t *testing.T) {
		rec := catalogues(t)
		c := client(t, rec)
		if _, err := c.ResumeSession(bg, "s1", &ResumeInput{Prompt: "go", Fallbacks: []TargetRef{{CommandName: "mh-claude"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ResumeSession(bg, "s1", &ResumeInput{Prompt: "go", Target: &TargetRef{CommandName: "mh-claude"}, Fallbacks: []TargetRef{{ProviderName: "claude"}}}); err != nil {
			t.Fatal(err)
		}
		want := []string{
			`POST https://harness.test/api/v1/sessions/s1/resume {"prompt":"go","fallbacks":[{"commandName":"mh-claude"}]}`,
			"GET https://harness.test/api/v1/commands?limit=100",
			"GET https://harness.test/api/v1/providers?limit=100",
			`POST https://harness.test/api/v1/sessions/s1/resume {"prompt":"go","target":{"commandId":"cmd-2"},"fallbacks":[{"providerId":"prov-2"}]}`,
		}
		if got := rec.lines(); !slices.Equal(got, want) {
			t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	for _, c := range []struct {
		name  string
		in    SessionInput
		code  string
		msg   string
		calls []string
	}{
		{"unknown provider", SessionInput{Target: &TargetRef{ProviderName: "nope"}}, CodeUnknownProviderName, `no provider named "nope"`, []string{"GET /providers?limit=100"}},
		{"unknown command", SessionInput{Target: &TargetRef{ProviderName: "codex"}, Fallbacks: []TargetRef{{CommandName: "nope"}}}, CodeUnknownCommandName, `no command named "nope"`, []string{"GET /providers?limit=100", "GET /commands?limit=100"}},
		{"ambiguous provider", SessionInput{Target: &TargetRef{ProviderName: "twin"}}, CodeAmbiguousProviderName, `ambiguous provider name "twin": 2 providers share this name`, []string{"GET /providers?limit=100"}},
		{"ambiguous command", SessionInput{Target: &TargetRef{CommandName: "dup"}}, CodeAmbiguousCommandName, `ambiguous command name "dup": 3 commands share this name`, []string{"GET /commands?limit=100"}},
		{"unknown repository", SessionInput{RepositoryName: "nope"}, CodeUnknownRepositoryName, `no repository named "nope"`, []string{"GET /repositories", "GET /repositories?cursor=c%202"}},
		{"ambiguous repository", SessionInput{RepositoryName: "same"}, CodeAmbiguousRepositoryName, `ambiguous repository name "same": 2 repositories share this name`, []string{"GET /repositories", "GET /repositories?cursor=c%202"}},
		{"names are exact", SessionInput{Target: &TargetRef{ProviderName: "Codex"}}, CodeUnknownProviderName, `no provider named "Codex"`, []string{"GET /providers?limit=100"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := catalogues(t)
			_, err := client(t, rec).CreateSession(bg, c.in)
			var e *Error
			if !errors.As(err, &e) || e.Status != 400 || e.Code != c.code || e.Message != c.msg || e.Details != nil {
				t.Fatalf("error %#v, want 400 %s %q", err, c.code, c.msg)
			}
			for _, id := range []string{"prov-", "cmd-", "repo-"} {
				if strings.Contains(err.Error(), id) {
					t.Errorf("the error %q shows an id", err)
				}
			}
			if got := paths(rec); !slices.Equal(got, c.calls) {
				t.Errorf("requests %v, want %v (and no session created)", got, c.calls)
			}
		})
	}
}

func TestCataloguePaging(t *testing.T) {
	page := func(items, next string) reply {
		if next == "" {
			return reply{200, `{"items":[` + items + `]}`, nil}
		}
		return reply{200, `{"items":[` + items + `],"nextCursor":"` + next + `"}`, nil}
	}
	t.Run("follows the cursor", func(t *testing.T) {
		rec := newRecorder(t, routes{
			"GET /api/v1/providers?limit=100":              page(`{"id":"a","name":"x"}`, "p/2"),
			"GET /api/v1/providers?limit=100&cursor=p%2F2": page(`{"id":"b","name":"y"}`, ""),
			"GET /api/v1/commands?limit=100":               {200, `{}`, nil},
		})
		c := client(t, rec)
		ps, err := c.ListProviders(bg)
		if err != nil || len(ps) != 2 || ps[0].ID != "a" || ps[1].Name != "y" || string(ps[1].Raw) != `{"id":"b","name":"y"}` {
			t.Errorf("providers %+v %v", ps, err)
		}
		cs, err := c.ListCommands(bg)
		if err != nil || len(cs) != 0 {
			t.Errorf("commands without items: %+v %v, want none", cs, err)
		}
	})
	t.Run("stops after 20 pages", func(t *testing.T) {
		rt := routes{"GET /api/v1/commands?limit=100": page(`{"id":"c0","name":"n"}`, "c1")}
		for i := 1; i < 25; i++ {
			rt[fmt.Sprintf("GET /api/v1/commands?limit=100&cursor=c%d", i)] = page(fmt.Sprintf(`{"id":"c%d","name":"n"}`, i), fmt.Sprintf("c%d", i+1))
		}
		rec := newRecorder(t, rt)
		_, err := client(t, rec).ListCommands(bg)
		if !errors.Is(err, ErrTooManyPages) || err.Error() != "pagination exceeded 20 pages for /commands" {
			t.Errorf("error %v", err)
		}
		if n := len(rec.requests()); n != 20 {
			t.Errorf("%d pages read, want 20", n)
		}
	})
	t.Run("refuses a repeated cursor", func(t *testing.T) {
		rec := newRecorder(t, routes{
			"GET /api/v1/providers?limit=100":          page(``, "a"),
			"GET /api/v1/providers?limit=100&cursor=a": page(``, "b"),
			"GET /api/v1/providers?limit=100&cursor=b": page(``, "a"),
		})
		_, err := client(t, rec).ListProviders(bg)
		if !errors.Is(err, ErrRepeatedCursor) || err.Error() != "repeated pagination cursor for /providers" {
			t.Errorf("error %v", err)
		}
		if n := len(rec.requests()); n != 3 {
			t.Errorf("%d pages read, want 3", n)
		}
	})
	t.Run("a repository name's look-up refuses a repeated cursor too", func(t *testing.T) {
		rec := newRecorder(t, routes{
			"GET /api/v1/repositories":          page(``, "a"),
			"GET /api/v1/repositories?cursor=a": page(``, "a"),
		})
		_, err := client(t, rec).StartSessionDrain(bg, RepositoryNamed("x"), "")
		if !errors.Is(err, ErrRepeatedCursor) || err.Error() != "repeated pagination cursor for /repositories" {
			t.Errorf("error %v", err)
		}
	})
	t.Run("a failing page ends the listing", func(t *testing.T) {
		rec := newRecorder(t, routes{
			"GET /api/v1/providers?limit=100": {403, `{"error":{"code":"FORBIDDEN","message":"no"}}`, nil},
		})
		_, err := client(t, rec).CreateSession(bg, SessionInput{Target: &TargetRef{ProviderName: "x"}})
		if ErrorCode(err) != "FORBIDDEN" || len(rec.requests()) != 1 {
			t.Errorf("error %v after %d requests", err, len(rec.requests()))
		}
	})
}

func TestDrainsByRepositoryName(t *testing.T) {
	rec := catalogues(t)
	c := client(t, rec)
	if _, err := c.GetSessionDrain(bg, RepositoryNamed("other"), "d"); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /repositories", "GET /repositories?cursor=c%202", "GET /repositories/repo-2/session-drains/d"}
	if got := paths(rec); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if _, err := c.StartSessionDrain(bg, RepositoryRef{}, ""); err == nil || err.Error() != "autoharness: a repository id or name is required" {
		t.Errorf("no repository: %v", err)
	}
}
