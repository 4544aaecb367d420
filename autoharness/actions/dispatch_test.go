package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/testkit/fakeplane"
)

const (
	session = `{"id":"s1","repositoryId":"repo-1","status":"queued","url":"https://ui/sessions/s1","created":true}`
	drained = `{"operationId":"d1","repositoryId":"repo-1","status":"%s","statusUrl":"/api/v1/repositories/repo-1/session-drains/d1","queuedCount":0,"runningCount":0,"cancelledCount":4%s}`
)

// plane is a stand-in control plane with the catalogues and the routes the
// Action uses.
func plane(t *testing.T) *fakeplane.Server {
	p := fakeplane.New()
	t.Cleanup(p.Close)
	p.Handle("GET /api/v1/commands?limit=100", fakeplane.Reply{Status: 200, Body: `{"items":[{"id":"cmd-1","name":"mh-claude"},{"id":"cmd-2","name":"claude-print-plan"}]}`})
	p.Handle("POST /api/v1/sessions", fakeplane.Reply{Status: 201, Body: session})
	p.Handle("POST /api/v1/repositories/repo-1/session-drains", fakeplane.Reply{Status: 202, Body: fmt.Sprintf(drained, "draining", "")})
	p.Handle("GET /api/v1/repositories/repo-1/session-drains/d1", fakeplane.Reply{Status: 200, Body: fmt.Sprintf(drained, "succeeded", "")})
	p.Handle("POST /api/v1/repositories/repo-1/session-drains/d1/release", fakeplane.Reply{Status: 200, Body: fmt.Sprintf(drained, "released", "")})
	return p
}

// dispatchEnv is a whole dispatch's inputs against p, with GitHub's files.
func dispatchEnv(t *testing.T, p *fakeplane.Server) map[string]string {
	env, _, _ := githubFiles(t)
	maps.Copy(env, map[string]string{
		"HARNESS_URL": p.URL + "/api/v1", "HARNESS_API_KEY": " key-1 ", "HARNESS_REPOSITORY_ID": "repo-1",
		"HARNESS_PROMPT": "Review the latest changes", "HARNESS_TARGET": `{"commandName":"mh-claude"}`, "HARNESS_TIMEOUT": "1800",
		"HARNESS_FALLBACKS": `[{"providerId":"prov-9"}]`, "HARNESS_REF": "main", "HARNESS_CONCURRENCY_ID": "github-7",
		"HARNESS_METADATA": `{"run": 7, "by": "ci"}`,
	})
	return env
}

func run(t *testing.T, p *fakeplane.Server, env map[string]string) (string, error) {
	var stdout bytes.Buffer
	err := Run(context.Background(), env, &stdout, p.Client().Transport)
	return stdout.String(), err
}

func TestRunDispatches(t *testing.T) {
	p := plane(t)
	env := dispatchEnv(t, p)
	env["GITHUB_ACTIONS"] = "true"
	stdout, err := run(t, p, env)
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].URI != "/api/v1/commands?limit=100" || reqs[1].Method != "POST" || reqs[1].URI != "/api/v1/sessions" {
		t.Fatalf("requests %+v", reqs)
	}
	want := `{"repositoryId":"repo-1","prompt":"Review the latest changes","target":{"commandId":"cmd-1"},"fallbacks":[{"providerId":"prov-9"}],"timeout":1800,"ref":"main","concurrencyId":"github-7","metadata":{"run":7,"by":"ci"}}`
	if reqs[1].Body != want {
		t.Errorf("body\n%s\nwant\n%s", reqs[1].Body, want)
	}
	if h := reqs[1].Header.Get("Authorization"); h != "Bearer key-1" {
		t.Errorf("authorization %q", h)
	}
	if got := read(t, env["GITHUB_OUTPUT"]); got != "earlier=1\nsession-id=s1\nsession-url=https://ui/sessions/s1\ncreated=true\n" {
		t.Errorf("GITHUB_OUTPUT %q", got)
	}
	if got := read(t, env["GITHUB_STEP_SUMMARY"]); !strings.HasSuffix(got, "- Concurrency: `github-7`\n- Provider route: `mh-claude` → `prov-9`\n") {
		t.Errorf("GITHUB_STEP_SUMMARY %q", got)
	}
	if stdout != "::notice title=Auto Harness session::s1 created https://ui/sessions/s1\n" {
		t.Errorf("stdout %q", stdout)
	}

	// The least a dispatch needs; outside Actions, a line of its own.
	p2 := plane(t)
	p2.Handle("POST /api/v1/sessions", fakeplane.Reply{Status: 200, Body: strings.Replace(session, `"created":true`, `"created":false`, 1)})
	stdout, err = run(t, p2, map[string]string{"HARNESS_URL": p2.URL, "HARNESS_API_KEY": "k", "HARNESS_REPOSITORY_ID": "repo-1",
		"HARNESS_PROMPT": "p", "HARNESS_TARGET": `{"providerId":"codex"}`, "HARNESS_TIMEOUT": "60"})
	if err != nil || stdout != "session s1 reused https://ui/sessions/s1\n" {
		t.Errorf("%q %v", stdout, err)
	}
	if reqs := p2.Requests(); len(reqs) != 1 || reqs[0].Body != `{"repositoryId":"repo-1","prompt":"p","target":{"providerId":"codex"},"timeout":60}` {
		t.Errorf("requests %+v", reqs)
	}
}

// TestRunRefusesBeforeAnyRequest: every input is checked before a request
// is made, and a refusal writes nothing.
func TestRunRefusesBeforeAnyRequest(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		code string
		msg  string
	}{
		{map[string]string{"HARNESS_OPERATION": "deploy"}, CodeInvalidOperation, "HARNESS_OPERATION must be one of dispatch, start-drain, get-drain, wait-for-drain, release-drain"},
		{map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1"}, CodeUnusedInput, "HARNESS_SESSION_DRAIN_ID is not used by operation dispatch; leave it empty, or set HARNESS_OPERATION to the operation it is for"},
		{map[string]string{"HARNESS_IDEMPOTENCY_KEY": "k"}, CodeUnusedInput, "HARNESS_IDEMPOTENCY_KEY is not used by operation dispatch; leave it empty, or set HARNESS_OPERATION to the operation it is for"},
		{map[string]string{"HARNESS_POLL_TIMEOUT_SECONDS": "60"}, CodeUnusedInput, "HARNESS_POLL_TIMEOUT_SECONDS is not used by operation dispatch; leave it empty, or set HARNESS_OPERATION to the operation it is for"},
		{map[string]string{"HARNESS_OPERATION": "start-drain"}, CodeUnusedInput, "HARNESS_PROMPT is not used by operation start-drain; leave it empty, or set HARNESS_OPERATION to the operation it is for"},
		{map[string]string{"HARNESS_URL": ""}, CodeMissingEnvironmentValue, "HARNESS_URL is required"},
		{map[string]string{"HARNESS_URL": "http://127.0.0.1:1"}, CodeInvalidHarnessURL, "HARNESS_URL must use https"},
		{map[string]string{"HARNESS_URL": "https://h.example/api"}, CodeInvalidHarnessURL, "HARNESS_URL must be an exact https origin, optionally suffixed with /api/v1"},
		{map[string]string{"HARNESS_API_KEY": " "}, CodeMissingEnvironmentValue, "HARNESS_API_KEY is required"},
		{map[string]string{"HARNESS_REQUEST_TIMEOUT_SECONDS": "0"}, CodeInvalidInteger, "HARNESS_REQUEST_TIMEOUT_SECONDS must be a positive integer"},
		{map[string]string{"HARNESS_REQUEST_TIMEOUT_SECONDS": "301"}, CodeInvalidInteger, "HARNESS_REQUEST_TIMEOUT_SECONDS must be at most 300"},
		{map[string]string{"HARNESS_REPOSITORY_ID": ""}, CodeMissingEnvironmentValue, "HARNESS_REPOSITORY_ID is required"},
		{map[string]string{"HARNESS_PROMPT": "\n"}, CodeMissingEnvironmentValue, "HARNESS_PROMPT is required"},
		{map[string]string{"HARNESS_TARGET": ""}, CodeInvalidTarget, "HARNESS_TARGET must be valid JSON"},
		{map[string]string{"HARNESS_TARGET": `{"commandName":"a","providerId":"b"}`}, CodeInvalidTarget, "HARNESS_TARGET must be exactly one of providerId, providerName, commandId, or commandName"},
		{map[string]string{"HARNESS_TIMEOUT": ""}, CodeMissingEnvironmentValue, "HARNESS_TIMEOUT is required"},
		{map[string]string{"HARNESS_TIMEOUT": "1.5"}, CodeInvalidInteger, "HARNESS_TIMEOUT must be a positive integer"},
		{map[string]string{"HARNESS_FALLBACKS": `{}`}, CodeInvalidFallbacks, "HARNESS_FALLBACKS must be a JSON array"},
		{map[string]string{"HARNESS_FALLBACKS": `[{"providerName":""}]`}, CodeInvalidTarget, "HARNESS_FALLBACKS[0].providerName must be a non-empty string"},
		{map[string]string{"HARNESS_CONCURRENCY_ID": "a b"}, CodeInvalidConcurrencyID, "HARNESS_CONCURRENCY_ID contains unsupported characters"},
		{map[string]string{"HARNESS_METADATA": `{"a":{}}`}, CodeInvalidMetadata, "HARNESS_METADATA.a must be a string, finite number, boolean, or null"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			p := plane(t)
			env := dispatchEnv(t, p)
			if c.set["HARNESS_OPERATION"] == "start-drain" {
				delete(env, "HARNESS_TIMEOUT") // the first unused input left is the prompt
				for _, k := range []string{"HARNESS_TARGET", "HARNESS_FALLBACKS", "HARNESS_REF", "HARNESS_CONCURRENCY_ID", "HARNESS_METADATA"} {
					env[k] = ""
				}
			}
			maps.Copy(env, c.set)
			stdout, err := run(t, p, env)
			var de *DispatchError
			if !errors.As(err, &de) || de.Code != c.code || de.Message != c.msg {
				t.Fatalf("error %#v, want %s %q", err, c.code, c.msg)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d requests before the refusal", n)
			}
			if stdout != "" || read(t, env["GITHUB_OUTPUT"]) != "earlier=1\n" || read(t, env["GITHUB_STEP_SUMMARY"]) != "# Earlier\n" {
				t.Errorf("a refusal wrote: stdout %q", stdout)
			}
		})
	}
}

func drainEnv(t *testing.T, p *fakeplane.Server, op string, set map[string]string) map[string]string {
	env, _, _ := githubFiles(t)
	maps.Copy(env, map[string]string{"HARNESS_OPERATION": op, "HARNESS_URL": p.URL, "HARNESS_API_KEY": "k", "HARNESS_REPOSITORY_ID": "repo-1"})
	maps.Copy(env, set)
	return env
}

func TestRunDrains(t *testing.T) {
	const outputs = "earlier=1\noperation-id=d1\nstatus=%s\nqueued-count=0\nrunning-count=0\ncancelled-count=4\nfailure-code=%s\nstatus-url=/api/v1/repositories/repo-1/session-drains/d1\nterminal=%t\n"
	for _, c := range []struct {
		op, status string
		set        map[string]string
		route      string
		terminal   bool
	}{
		{"start-drain", "draining", map[string]string{"HARNESS_IDEMPOTENCY_KEY": " deploy-7 "}, "POST /api/v1/repositories/repo-1/session-drains", false},
		{"get-drain", "succeeded", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1"}, "GET /api/v1/repositories/repo-1/session-drains/d1", true},
		{"release-drain", "released", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1"}, "POST /api/v1/repositories/repo-1/session-drains/d1/release", true},
		{"wait-for-drain", "succeeded", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_POLL_INTERVAL_SECONDS": "1"}, "GET /api/v1/repositories/repo-1/session-drains/d1", true},
	} {
		t.Run(c.op, func(t *testing.T) {
			p := plane(t)
			env := drainEnv(t, p, c.op, c.set)
			stdout, err := run(t, p, env)
			if err != nil {
				t.Fatal(err)
			}
			reqs := p.Requests()
			if len(reqs) != 1 || reqs[0].Method+" "+reqs[0].URI != c.route || reqs[0].Body != "" {
				t.Fatalf("requests %+v, want %s", reqs, c.route)
			}
			if key := reqs[0].Header.Get("Idempotency-Key"); key != map[bool]string{true: "deploy-7"}[c.op == "start-drain"] {
				t.Errorf("idempotency key %q", key)
			}
			if got := read(t, env["GITHUB_OUTPUT"]); got != fmt.Sprintf(outputs, c.status, "", c.terminal) {
				t.Errorf("GITHUB_OUTPUT:\n%s", got)
			}
			if want := "session drain d1 of repository repo-1: " + c.status + " (queued 0, running 0, cancelled 4)\n"; stdout != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}
		})
	}
	t.Run("wait-for-drain polls until the drain ends", func(t *testing.T) {
		p := plane(t)
		p.Handle("GET /api/v1/repositories/repo-1/session-drains/d1",
			fakeplane.Reply{Status: 200, Body: fmt.Sprintf(drained, "draining", "")},
			fakeplane.Reply{Status: 200, Body: fmt.Sprintf(drained, "succeeded", "")})
		env := drainEnv(t, p, "wait-for-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_POLL_INTERVAL_SECONDS": "1"})
		if _, err := run(t, p, env); err != nil {
			t.Fatal(err)
		}
		if n := len(p.Requests()); n != 2 {
			t.Errorf("%d polls, want 2", n)
		}
	})
	for _, status := range []string{"failed", "released", "something-new"} {
		t.Run("wait-for-drain fails closed on "+status, func(t *testing.T) {
			p := plane(t)
			failure := map[bool]string{true: `,"failureCode":"CANCEL_FAILED"`}[status == "failed"]
			p.Handle("GET /api/v1/repositories/repo-1/session-drains/d1", fakeplane.Reply{Status: 200, Body: fmt.Sprintf(drained, status, failure)})
			env := drainEnv(t, p, "wait-for-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1"})
			stdout, err := run(t, p, env)
			var oe *DrainOutcomeError
			want := "session drain d1 of repository repo-1 ended " + status + ", not succeeded"
			if status == "failed" {
				want += " (failure code CANCEL_FAILED)"
			}
			if !errors.As(err, &oe) || err.Error() != want {
				t.Fatalf("error %v, want %q", err, want)
			}
			// Reported before it fails, so a later step can read why.
			code := map[bool]string{true: "CANCEL_FAILED"}[status == "failed"]
			if got := read(t, env["GITHUB_OUTPUT"]); got != fmt.Sprintf(outputs, status, code, true) {
				t.Errorf("GITHUB_OUTPUT:\n%s", got)
			}
			if !strings.HasPrefix(stdout, "session drain d1 of repository repo-1: "+status) {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
	t.Run("wait-for-drain runs out of time", func(t *testing.T) {
		p := plane(t)
		p.Handle("GET /api/v1/repositories/repo-1/session-drains/d1", fakeplane.Reply{Hang: true})
		env := drainEnv(t, p, "wait-for-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_POLL_TIMEOUT_SECONDS": "1"})
		_, err := run(t, p, env)
		if autoharness.ErrorCode(err) != autoharness.CodeDrainWaitTimeout || err.Error() != "Auto Harness session drain wait timed out after 1000ms" {
			t.Fatalf("error %v", err)
		}
		if got := read(t, env["GITHUB_OUTPUT"]); got != "earlier=1\n" {
			t.Errorf("GITHUB_OUTPUT %q", got)
		}
	})
	t.Run("a request times out", func(t *testing.T) {
		p := plane(t)
		p.Handle("GET /api/v1/repositories/repo-1/session-drains/d1", fakeplane.Reply{Hang: true})
		env := drainEnv(t, p, "get-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_REQUEST_TIMEOUT_SECONDS": "1"})
		_, err := run(t, p, env)
		if autoharness.ErrorCode(err) != autoharness.CodeRequestTimeout || err.Error() != "Auto Harness request timed out after 1000ms" {
			t.Fatalf("error %v", err)
		}
	})
	for _, c := range []struct {
		op   string
		set  map[string]string
		code string
		msg  string
	}{
		{"get-drain", nil, CodeMissingEnvironmentValue, "HARNESS_SESSION_DRAIN_ID is required"},
		{"start-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1"}, CodeUnusedInput, "HARNESS_SESSION_DRAIN_ID is not used by operation start-drain; leave it empty, or set HARNESS_OPERATION to the operation it is for"},
		{"release-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_POLL_INTERVAL_SECONDS": "5"}, CodeUnusedInput, "HARNESS_POLL_INTERVAL_SECONDS is not used by operation release-drain; leave it empty, or set HARNESS_OPERATION to the operation it is for"},
		{"wait-for-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_POLL_INTERVAL_SECONDS": "0"}, CodeInvalidInteger, "HARNESS_POLL_INTERVAL_SECONDS must be a positive integer"},
		{"wait-for-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_POLL_TIMEOUT_SECONDS": "604801"}, CodeInvalidInteger, "HARNESS_POLL_TIMEOUT_SECONDS must be at most 604800"},
		{"wait-for-drain", map[string]string{"HARNESS_SESSION_DRAIN_ID": "d1", "HARNESS_REPOSITORY_ID": ""}, CodeMissingEnvironmentValue, "HARNESS_REPOSITORY_ID is required"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			p := plane(t)
			env := drainEnv(t, p, c.op, c.set)
			_, err := run(t, p, env)
			var de *DispatchError
			if !errors.As(err, &de) || de.Code != c.code || de.Message != c.msg {
				t.Fatalf("error %#v, want %s %q", err, c.code, c.msg)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d requests before the refusal", n)
			}
		})
	}
}

func TestRunReportsTheServersRefusal(t *testing.T) {
	p := plane(t)
	p.Handle("POST /api/v1/sessions", fakeplane.Reply{Status: 409, Header: http.Header{"Retry-After": {"30"}},
		Body: `{"error":{"code":"DRAINING","message":"this principal's session drain fences the repository","operationId":"d1","statusUrl":"/api/v1/repositories/repo-1/session-drains/d1"}}`})
	env := dispatchEnv(t, p)
	_, err := run(t, p, env)
	var e *autoharness.Error
	if !errors.As(err, &e) || e.Code != "DRAINING" || e.OperationID != "d1" || e.RetryAfter != "30" {
		t.Fatalf("error %#v", err)
	}
	if got := read(t, env["GITHUB_OUTPUT"]); got != "earlier=1\n" {
		t.Errorf("GITHUB_OUTPUT %q", got)
	}
	// A write that fails is an error of its own.
	p = plane(t)
	env = dispatchEnv(t, p)
	env["GITHUB_OUTPUT"] = filepath.Join(t.TempDir(), "no", "such")
	if _, err := run(t, p, env); err == nil || !strings.HasPrefix(err.Error(), "appending to GITHUB_OUTPUT") {
		t.Errorf("error %v", err)
	}
}
