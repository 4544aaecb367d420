package actions

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
)

// WriteOutputs reports a dispatched session to the workflow, each only
// when the workflow asks for it: its id, URL and whether it is new as step
// outputs (appended to GITHUB_OUTPUT), a short summary (appended to
// GITHUB_STEP_SUMMARY) naming the concurrency identity and the route the
// session may take (route: the target, then the fallbacks; none means the
// session keeps the route it had), and, under GITHUB_ACTIONS=true, a
// ::notice line on stdout.
func WriteOutputs(env map[string]string, stdout io.Writer, s *autoharness.Session, route []autoharness.TargetRef) error {
	if err := appendTo(env, "GITHUB_OUTPUT", output("session-id", s.ID)+output("session-url", s.URL)+output("created", strconv.FormatBool(s.Created))); err != nil {
		return err
	}
	created := map[bool]string{true: "yes", false: "no"}[s.Created]
	lines := []string{"## Auto Harness dispatch", "", "- Session: [" + s.ID + "](" + s.URL + ")", "- Created: " + created}
	if c := trim(env["HARNESS_CONCURRENCY_ID"]); c != "" {
		lines = append(lines, "- Concurrency: `"+c+"`")
	}
	lines = append(lines, "- Provider route: "+describeRoute(route), "")
	if err := appendTo(env, "GITHUB_STEP_SUMMARY", strings.Join(lines, "\n")); err != nil {
		return err
	}
	if env["GITHUB_ACTIONS"] == "true" {
		verb := map[bool]string{true: "created", false: "reused"}[s.Created]
		if _, err := fmt.Fprintf(stdout, "::notice title=Auto Harness session::%s\n", commandData(s.ID+" "+verb+" "+s.URL)); err != nil {
			return err
		}
	}
	return nil
}

// WriteDrainOutputs reports a session drain as step outputs (appended to
// GITHUB_OUTPUT, when it is set): operation-id, status, queued-count,
// running-count, cancelled-count and failure-code ("" when none).
func WriteDrainOutputs(env map[string]string, d *autoharness.SessionDrain) error {
	return appendTo(env, "GITHUB_OUTPUT", output("operation-id", d.OperationID)+output("status", d.Status)+
		output("queued-count", strconv.FormatInt(d.QueuedCount, 10))+output("running-count", strconv.FormatInt(d.RunningCount, 10))+
		output("cancelled-count", strconv.FormatInt(d.CancelledCount, 10))+output("failure-code", d.FailureCode))
}

// describeRoute is each reference as its one value in backticks, joined
// by arrows.
func describeRoute(route []autoharness.TargetRef) string {
	if len(route) == 0 {
		return "retained from the existing session"
	}
	var parts []string
	for _, r := range route {
		v := r.CommandName
		for _, s := range []string{r.ProviderID, r.ProviderName, r.CommandID} {
			if s != "" {
				v = s
				break
			}
		}
		parts = append(parts, "`"+v+"`")
	}
	return strings.Join(parts, " → ")
}

// output is one step output as GITHUB_OUTPUT takes it: name=value, or, for
// a value with a line break (which would otherwise end it early and let
// the rest set outputs of its own), the delimited form with a delimiter
// the value does not hold.
func output(name, value string) string {
	if !strings.ContainsAny(value, "\r\n") {
		return name + "=" + value + "\n"
	}
	var b [16]byte
	rand.Read(b[:])
	delim := "ghadelimiter_" + hex.EncodeToString(b[:])
	return name + "<<" + delim + "\n" + value + "\n" + delim + "\n"
}

// commandData escapes s for the message of a workflow command, so that a
// server's text cannot end the line and start a command of its own.
func commandData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// appendTo appends text to the file env[name] names, when it names one.
func appendTo(env map[string]string, name, text string) error {
	path := env[name]
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("appending to %s (%s): %w", name, path, err)
	}
	return nil
}
