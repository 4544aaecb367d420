package launcher

import "testing"

// TestCustodyHides: a view keeps a path from its child when it covers it,
// or hides or freshens a directory holding it and binds nothing back over
// it; an unconfined child's view keeps nothing.
func TestCustodyHides(t *testing.T) {
	c := custody{Confined: true, Hidden: []string{"/home/op", "/tmp"}, Bound: []string{"/home/op/tree"},
		Covered: []string{"/home/op/tree/secret", "/home/op/.claude*"}}
	for p, want := range map[string]bool{
		"/home/op/token":           true,  // in a hidden directory
		"/tmp/x/token":             true,  // in a fresh one
		"/home/op/tree/token":      false, // bound back
		"/home/op/tree/secret/key": true,  // covered inside the bind
		"/home/op/.claude.json":    true,  // covered by a pattern
		"/var/lib/keys/token":      false, // nowhere hidden
	} {
		if got := c.hides(p); got != want {
			t.Errorf("hides(%s) = %v, want %v", p, got, want)
		}
	}
	if (custody{Hidden: []string{"/"}}).hides("/home/op/token") {
		t.Error("an unconfined child's view hid something")
	}
}
