package frame

import (
	"strings"
	"testing"

	"github.com/metaharness/metaharness/record"
)

func TestVerdictSteps(t *testing.T) {
	f := mustSeal(t, sample()) // admits file.edit, file.read, mcp.call(gh/issue), shell
	cases := []struct {
		name     string
		res      Resolution
		decision string
		warning  string
		says     []string
	}{
		{"catalogue question", Resolution{Catalogue: true}, record.Allow, "", nil},
		{"uncovered", Resolution{}, record.Deny, WarnUncoveredTool,
			[]string{"Tool resolves to no operation", "admits file.edit, file.read, mcp.call(gh/issue), shell"}},
		{"not admitted", Resolution{Operations: []Operation{{Op: "web.read"}}}, record.Deny, "",
			[]string{"resolves to web.read, which the frame does not admit", "admits file.edit"}},
		{"admitted", Resolution{Operations: []Operation{{Op: "shell"}}, Subjects: []string{"proc:ls"}}, record.Allow, "", nil},
		{"any admitted op is enough", Resolution{Operations: []Operation{{Op: "file.write"}, {Op: "file.edit"}}, Subjects: []string{"file:lib/a.go"}}, record.Allow, "", nil},
		{"mcp tool not named", Resolution{Operations: []Operation{{Op: MCPCall, Server: "gh", Tool: "merge"}}}, record.Deny, "",
			[]string{"mcp.call(gh/merge)"}},
		{"scope denies", Resolution{Operations: []Operation{{Op: "file.edit"}}, Subjects: []string{"file:secrets/key"}}, record.Deny, "",
			[]string{`"secrets/key"`, "denies writes there (rule 1, \"secrets/**\")", "the way in"}},
		{"partial-only admits edit", Resolution{Operations: []Operation{{Op: "file.edit"}}, Subjects: []string{"file:src/a.go"}}, record.Allow, "", nil},
		{"climbing path", Resolution{Operations: []Operation{{Op: "file.edit"}}, Subjects: []string{"file:src/../secrets/key"}}, record.Deny, "",
			[]string{`climbs with ".."`}},
		{"write names no file", Resolution{Operations: []Operation{{Op: "file.edit"}}}, record.Deny, "",
			[]string{"names no file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := f.Verdict("Tool", c.res)
			if v.Decision.Decision != c.decision {
				t.Fatalf("decision %+v, want %s", v.Decision, c.decision)
			}
			if err := v.Decision.Validate(); err != nil {
				t.Fatalf("the verdict's decision is not valid on the wire: %v", err)
			}
			if (v.Warning == nil) != (c.warning == "") || (v.Warning != nil && v.Warning.Code != c.warning) {
				t.Fatalf("warning %+v, want %q", v.Warning, c.warning)
			}
			for _, s := range c.says {
				if !strings.Contains(v.Decision.Reason, s) {
					t.Errorf("reason %q does not say %q", v.Decision.Reason, s)
				}
			}
		})
	}
}

func TestPartialOnlyRefusesWriteButAdmitsEdit(t *testing.T) {
	d := sample()
	d.Operations = append(d.Operations, Operation{Op: "file.write"})
	f := mustSeal(t, d)
	w := f.Verdict("Write", Resolution{Operations: []Operation{{Op: "file.write"}}, Subjects: []string{"file:src/new.go"}})
	if w.Decision.Decision != record.Deny || !strings.Contains(w.Decision.Reason, "partial-only") {
		t.Fatalf("file.write under partial-only: %+v", w.Decision)
	}
	e := f.Verdict("Edit", Resolution{Operations: []Operation{{Op: "file.edit"}}, Subjects: []string{"file:src/new.go"}})
	if e.Decision.Decision != record.Allow {
		t.Fatalf("file.edit under partial-only: %+v", e.Decision)
	}
}

func TestAFrameAdmittingNothingSaysSo(t *testing.T) {
	d := sample()
	d.Operations = nil
	v := mustSeal(t, d).Verdict("Read", Resolution{Operations: []Operation{{Op: "file.read"}}})
	if !strings.Contains(v.Decision.Reason, "the frame admits no operation") {
		t.Fatalf("reason: %s", v.Decision.Reason)
	}
}
