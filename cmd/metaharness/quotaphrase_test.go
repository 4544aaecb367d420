package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// usageLimitPhrases are the nine patterns Auto Harness's host daemon
// matches a session's merged output against, in its order, to file the
// session usage_limit whatever its exit code (services/host-daemon/src/
// usage-limit.ts at commit 178686c); quotaPhrase is any of them.
// metaharness may print one only when the upstream really answered a
// quota error.
var usageLimitPhrases = []string{`usage[_\s-]?limit`, `rate[_\s-]?limit`, `quota[_\s-]?exceeded`, `insufficient_quota`,
	`you exceeded your current quota`, `rate limit reached`, `rate_limit_error`, `monthly limit`, `too many requests`}

var quotaPhrase = regexp.MustCompile(`(?i)` + strings.Join(usageLimitPhrases, "|"))

// noQuotaPhrase fails when text, what metaharness printed as what, would
// fire a fleet's usage-limit rule.
func noQuotaPhrase(t *testing.T, what, text string) {
	t.Helper()
	if m := quotaPhrase.FindString(text); m != "" {
		t.Errorf("%s carries %q, which a fleet's usage-limit rule takes for a quota error:\n%s", what, m, text)
	}
}

// phraseAllowed are the string literals of the module's own code that
// carry a quota phrase, each for a reason that keeps it off a normal run's
// output.
var phraseAllowed = map[string][]string{
	// The vendors' error types a quota answer is told by; printed only in
	// the line for an answer that had one. The second pair are the hard
	// quotas, which no throttle budget waits out.
	"loopback/quota.go": {`"rate_limit_error"`, `"insufficient_quota"`, `"rate_limit_exceeded"`, `"usage_limit_reached"`, `"insufficient_quota"`, `"usage_limit_reached"`},
	// README's words for exit 4, held to the README's exit table and
	// never printed.
	"exit/exit.go": {"\"`run` only: the model API would not serve the account: a 429 that `--throttle-budget` does not cover (a longer wait asked, or the budget spent), `insufficient_quota`, a quota error inside a stream; one `metaharness: usage-limit: …` line says which. Not a verdict of the controls: the same task may succeed after a cooldown or on another account\""},
	// The one line for a real quota answer.
	"launcher/run_windup.go": {`"metaharness: usage-limit: %v; the run was stopped at that answer (%s) instead of sitting through the vendor's retries (exit %d: retry after a cooldown, or on another account)"`},
	// The event the vendor's own rate-limit notices become: stream
	// content, never printed under --output final.
	"record/events.go":   {`"rate_limit"`, `"rate_limit"`, `"rate_limit"`},
	"traceir/project.go": {`"rate_limit"`, `"rate_limit"`},
	// Names in the vendors' records and notifications, read, never printed.
	"launcher/claude/transcript.go": {`"rate_limit_event"`, "`json:\"rateLimitType\"`", "`json:\"rate_limit_info\"`"},
	"launcher/codex/plan.go":        {`"account/rateLimits/updated"`},
	"launcher/codex/transcript.go":  {`"account/rateLimits/updated"`},
	// The operator CLI's host smoke (auto-harness, never a session's
	// Command, so never in a session's output a fleet reads): the seed's
	// words for a provider it found out of quota, and the control plane's
	// error code it reads and names as the provider's failure.
	"autoharness/operator/smoke.go": {`"provider account hit its usage limit"`, `"usage_limit"`, `"usage_limit"`},
	// The scripted model's error type for a 429, as Anthropic names it.
	"conformance/scripted/script.go": {`"rate_limit_error"`},
}

// TestNoQuotaPhraseInOwnTexts: no text of the program's own (a message, a
// flag's help, a banner) carries a phrase a fleet's usage-limit rule
// matches, but for the literals phraseAllowed names, so that such a rule
// fires only on an upstream's real quota answer. A "rate limit: 10/s"
// banner would mark every session as usage-limited.
func TestNoQuotaPhraseInOwnTexts(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string][]string{}
	err := ownSources(root, func(path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING && quotaPhrase.MatchString(l.Value) {
				found[rel] = append(found[rel], l.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, lits := range found {
		allowed := phraseAllowed[file]
		for i, l := range lits {
			if i >= len(allowed) || allowed[i] != l {
				t.Errorf("%s: the literal %s carries a phrase a fleet's usage-limit rule matches (%q): reword it, or, if it is a vendor's name that is read and never printed, add it to phraseAllowed with why", file, l, quotaPhrase.FindString(l))
			}
		}
	}
	for file := range phraseAllowed {
		if len(found[file]) != len(phraseAllowed[file]) {
			t.Errorf("phraseAllowed lists %d literals of %s, the file has %d: keep the list to what is there", len(phraseAllowed[file]), file, len(found[file]))
		}
	}
}
