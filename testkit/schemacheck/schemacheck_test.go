package schemacheck

import (
	"strings"
	"testing"

	"github.com/metaharness/metaharness/provenance"
	"github.com/metaharness/metaharness/record"
)

// TestLine: what the writer renders passes, the applies_at null of an ok
// outcome included; a line that breaks its schema, or has none, does not.
func TestLine(t *testing.T) {
	ok, err := record.EncodeEvent(1, "r", nil, &record.CommandResult{ID: "c1", Outcome: record.OK(nil)})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := record.EncodeCommand("c1", &record.ToolDecide{CallID: "t1", Decision: record.AllowDecision()})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range [][]byte{ok, cmd} {
		if err := Line(line); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	for line, says := range map[string]string{
		`{"format":"metaharness.event/1","seq":1,"run":"r","event":"command.result","id":"c1","outcome":{"result":"ok","applies_at":5}}`: "does not match schemas/event.schema.json",
		`{"format":"metaharness.event/1","seq":0,"run":"r","event":"text","text":"a","request_id":null}`:                                 "does not match",
		`{"format":"metaharness.command/1","id":"c1","command":"tool.decide","call_id":"t1","decision":{"decision":"maybe"}}`:            "does not match schemas/command.schema.json",
		`{"format":"metaharness.frame/1"}`: `the line's format "metaharness.frame/1" has no published schema`,
		`{"seq":1}`:                        "no format tag",
	} {
		if err := Line([]byte(line)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want %q", line, err, says)
		}
	}
}

// TestInstall: once installed, a line record renders that breaks its
// schema reaches onFail.
func TestInstall(t *testing.T) {
	var failed [][]byte
	Install(func(line []byte, _ error) { failed = append(failed, line) })
	defer record.SetLineCheck(nil)
	if _, err := record.EncodeEvent(1, "r", nil, &record.Text{Text: "fine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := record.EncodeEvent(1, "r", nil, &record.ToolDecided{CallID: "t", Decision: record.Decision{Decision: "maybe"}}); err != nil {
		t.Fatal(err)
	}
	if len(failed) != 1 || !strings.Contains(string(failed[0]), `"maybe"`) {
		t.Errorf("onFail heard %q", failed)
	}
}

// TestStatement: a sealed statement passes; one whose subject has a role
// the schema does not name, or an envelope with no statement, does not.
func TestStatement(t *testing.T) {
	st := provenance.Statement{
		Subject:   []provenance.Subject{provenance.UnkeptSubject(provenance.RoleEvents, "stdout:events", strings.Repeat("ab", 32))},
		Predicate: provenance.Predicate{Run: "claude-0123456789ab", Kind: "claude", Metaharness: "dev"},
	}
	good, err := provenance.Seal(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Statement(good); err != nil {
		t.Errorf("a sealed statement: %v", err)
	}
	st.Subject[0].Annotations.Role = "notes"
	bad, err := provenance.Seal(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for env, says := range map[string]string{
		string(bad):                  "does not match schemas/run-statement.schema.json",
		`{"payload":"bm90IGpzb24="}`: "the payload is not JSON",
		`{"payload":"%%"}`:           "not base64",
	} {
		if err := Statement([]byte(env)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%.80s: %v, want %q", env, err, says)
		}
	}
}
