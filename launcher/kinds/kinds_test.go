package kinds

import (
	"slices"
	"testing"
)

// TestTable: each row's name is unique, agrees with its descriptor's
// adapter id, and names a binary and a pin.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range table {
		d := k.Descriptor()
		if seen[d.Name] {
			t.Errorf("kind %s is in the table twice", d.Name)
		}
		seen[d.Name] = true
		if d.Capabilities == nil || d.Capabilities.Adapter.ID != d.Name {
			t.Errorf("kind %s: its capabilities name another adapter", d.Name)
		}
		if d.Binary == "" || len(d.Capabilities.VersionsPinned) == 0 {
			t.Errorf("kind %s names no binary or pin", d.Name)
		}
		if got, ok := Lookup(d.Name); !ok || got.Descriptor().Name != d.Name {
			t.Errorf("Lookup(%s) = %v, %v", d.Name, got, ok)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("an unknown kind was found")
	}
	if got := Names(); !slices.Equal(got, []string{"claude", "codex", "b10x"}) {
		t.Errorf("Names() = %v", got)
	}
	if got := Spelled(Names()); got != "claude, codex or b10x" {
		t.Errorf("Spelled = %q", got)
	}
}
