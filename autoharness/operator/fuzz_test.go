package operator

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzInventoryRewrite: whatever inventory record the control plane
// sends, the record an attach or a detach writes back is JSON holding
// every member of the one read, in its order and with its bytes, but for
// repositories (those read less one, plus one) and version (the one read,
// 0 when it had none).
func FuzzInventoryRewrite(f *testing.F) {
	for _, s := range []string{
		`{"hostId":"h-1","repositories":[{"id":"r-1","path":"/r","worktrees":[{"id":"w"}]}],"providerAccounts":[{"providerAccountId":"pa-1"}],"version":29}`,
		`{"repositories":[],"hostId":"h","capabilities":{"os":"<linux>"}}`,
		`{ "version" : null , "repositories" : [ {"id":"a"} , {"id":"b"} ] }`,
		`{"version":"3","repositories":null,"runtime":[1,2.50,"\u00e9"]}`,
		`{}`,
	} {
		f.Add(s)
	}
	entry := MustEncode(Entry{ID: "r-new", Path: "/repos/new", Worktrees: []Worktree{{ID: "w", Name: "w", Path: "/repos/new/w", Labels: []string{}}}})
	f.Fuzz(func(t *testing.T, raw string) {
		inv, err := ParseInventory(json.RawMessage(raw))
		if err != nil {
			return
		}
		gone := ""
		if len(inv.Repositories) > 0 {
			gone = inv.Repositories[0].ID
		}
		repos := append(inv.raws(gone), entry)
		out, err := inv.with(repos)
		if err != nil || !json.Valid(out) {
			t.Fatalf("rewrite of %s: %s, %v", raw, out, err)
		}
		before, _ := Members(json.RawMessage(raw))
		after, err := Members(out)
		if err != nil {
			t.Fatalf("rewrite of %s: %s: %v", raw, out, err)
		}
		kept := func(ms []Member) (other []Member, set map[string]json.RawMessage) {
			set = map[string]json.RawMessage{}
			for _, m := range ms {
				if m.Key == "repositories" || m.Key == "version" {
					set[m.Key] = m.Value
					continue
				}
				other = append(other, m)
			}
			return other, set
		}
		b, _ := kept(before)
		a, set := kept(after)
		if len(a) != len(b) {
			t.Fatalf("rewrite of %s kept %d other members of %d: %s", raw, len(a), len(b), out)
		}
		for i := range a {
			if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
				t.Fatalf("rewrite of %s changed member %q: %s", raw, b[i].Key, out)
			}
		}
		if !bytes.Equal(set["version"], inv.Version) || !bytes.Equal(set["repositories"], MustEncode(repos)) {
			t.Fatalf("rewrite of %s: version %s (read %s), repositories %s", raw, set["version"], inv.Version, set["repositories"])
		}
	})
}
