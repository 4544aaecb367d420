package attest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestClaim holds the builder to its rules: each row once, in one state;
// later hands add to a claimed row or withdraw an imposition; the lists
// come out as the report orders them.
func TestClaim(t *testing.T) {
	c := NewClaim(ModeStrict, "frame")
	c.Impose(H12, "gate")
	c.Impose(H4, "placeholder")
	c.Unavailable(H7, "operator's tree")
	c.Declare(H11, "declared")
	c.Impose(H6, "no file")
	c.Enforce(H4, "namespaces")
	c.Enforce(H7, "not imposed, so not enforced")
	c.Add(H7, "; and more")
	c.Withdraw(H6, "unconfined")
	c.Withdraw(H7, "no effect on a row that is not imposed")
	c.Ambient("x")
	c.Ambient("x")
	a := c.Attestation()
	b, _ := json.Marshal(a)
	want := `{"mode":"strict","decisions":"frame",` +
		`"imposed":[{"row":"h4","how":"placeholder; namespaces"},{"row":"h12","how":"gate"}],` +
		`"unavailable":[{"row":"h7","why":"operator's tree; and more"},{"row":"h6","why":"unconfined (the launch itself: no file)"}],` +
		`"declared":[{"row":"h11","what":"declared"}],"ambient_inputs":["x"],"installed_plugins":[]}`
	if string(b) != want {
		t.Errorf("attestation\n got %s\nwant %s", b, want)
	}

	for name, misuse := range map[string]func(*Claim){
		"claimed twice":         func(c *Claim) { c.Impose(H2, "a"); c.Unavailable(H2, "b") },
		"enforce unclaimed":     func(c *Claim) { c.Enforce(H3, "x") },
		"add to unclaimed":      func(c *Claim) { c.Add(H3, "x") },
		"withdraw an unclaimed": func(c *Claim) { c.Withdraw(H3, "x") },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "h2") && !strings.Contains(r.(string), "h3") {
					t.Errorf("%s: want a panic naming the row, got %v", name, r)
				}
			}()
			misuse(NewClaim("", ""))
		}()
	}
}

// TestRowIDText: a row reads back from the wire's spelling, and a row the
// floor does not list is refused.
func TestRowIDText(t *testing.T) {
	for _, spec := range Rows {
		var id RowID
		if err := id.UnmarshalText([]byte(spec.ID.String())); err != nil || id != spec.ID {
			t.Errorf("%s: %v %v", spec.ID, id, err)
		}
	}
	var id RowID
	if err := id.UnmarshalText([]byte("h99")); err == nil {
		t.Error("h99 was read as a row")
	}
}

// TestEveryRowIDIsARow: each RowID variable claim.go declares is a row of
// the floor (Rows), so that a row a kind can claim is one the floor
// evaluates and the wire reads back (RowID.UnmarshalText).
func TestEveryRowIDIsARow(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "claim.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.CompositeLit)
				if !ok {
					continue
				}
				if typ, ok := lit.Type.(*ast.Ident); !ok || typ.Name != "RowID" {
					continue
				}
				declared++
				id, err := strconv.Unquote(lit.Elts[0].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(Rows, func(r RowSpec) bool { return r.ID.String() == id }) {
					t.Errorf("%s (%q) is declared in claim.go and missing from Rows (rows.go)", name.Name, id)
				}
			}
		}
	}
	if declared == 0 {
		t.Fatal("no RowID variables found in claim.go")
	}
}

// TestClaimed names each row's state as a reader of the attestation sees
// it: an imposition the confinement enforces apart from one it does not.
func TestClaimed(t *testing.T) {
	c := NewClaim(ModeStrict, "frame")
	c.Impose(H4, "the child holds a placeholder")
	c.Enforce(H4, "enforced: the child runs in namespaces of its own")
	c.Impose(H13, "the proxy reads every response")
	c.Enforce(H13, "in the kernel: the vendor's stdio are one-way unix sockets")
	c.Impose(H6, "no credential file")
	c.Enforce(H6, "bound back read-only as the launch names them: /run/bus")
	c.Impose(H12, "the gate")
	c.Withdraw(H12, "--unconfined")
	c.Declare(H7, "the caller's own tree")
	a := c.Attestation()
	for _, w := range []struct {
		row          RowID
		state, words string
	}{
		{H4, ClaimEnforced, "the child holds a placeholder; enforced: the child runs in namespaces of its own"},
		{H13, ClaimEnforced, "the proxy reads every response; in the kernel: the vendor's stdio are one-way unix sockets"},
		{H6, ClaimImposed, "no credential file; bound back read-only as the launch names them: /run/bus"},
		{H12, ClaimUnavailable, "--unconfined (the launch itself: the gate)"},
		{H7, ClaimDeclared, "the caller's own tree"},
		{H9, "", ""},
	} {
		if state, words := Claimed(&a, w.row); state != w.state || words != w.words {
			t.Errorf("%s: %q %q, want %q %q", w.row.Display(), state, words, w.state, w.words)
		}
	}
	if state, _ := Claimed(nil, H4); state != "" {
		t.Errorf("no attestation claims %s", state)
	}
}
