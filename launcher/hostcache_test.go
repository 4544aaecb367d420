package launcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestVersionCacheLocation(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"METAHARNESS_CACHE": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c/versions"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/metaharness/versions"},
		{map[string]string{"XDG_CACHE_HOME": "rel", "HOME": "/h"}, "/h/.cache/metaharness/versions"},
		{map[string]string{"METAHARNESS_CACHE": "rel"}, ""},
		{map[string]string{}, ""},
	} {
		if got := openCache(c.env, "versions").dir; got != c.want {
			t.Errorf("%v: cache in %q, want %q", c.env, got, c.want)
		}
	}
}

// A cache entry is believed only for the very binary it was written for; a
// stale, corrupt or foreign-writable entry is a miss, never an error.
func TestVersionCacheHitStaleCorrupt(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := openCache(map[string]string{"METAHARNESS_CACHE": filepath.Join(dir, "cache")}, "versions")
	id, err := identify(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.lookup(id); ok {
		t.Fatal("a hit in an empty cache")
	}
	if err := c.store(id, "2.1.328"); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.lookup(id); !ok || v != "2.1.328" {
		t.Fatalf("lookup = %q, %v; want the stored version", v, ok)
	}

	// Stale: the binary touched (same content, new mtime) is another binary.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	touched, err := identify(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.lookup(touched); ok {
		t.Fatal("a touched binary was found under its old identity")
	}

	// Corrupt: an entry that does not decode, or names another identity.
	for _, body := range []string{"{not json", `{"key":{"path":"/elsewhere"},"value":"2.1.328"}`, ""} {
		if err := os.WriteFile(c.path(id), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if v, ok := c.lookup(id); ok {
			t.Fatalf("entry %q believed: %q", body, v)
		}
	}
	if err := c.store(id, "2.1.328"); err != nil {
		t.Fatalf("a corrupt entry blocks its replacement: %v", err)
	}
	if v, ok := c.lookup(id); !ok || v != "2.1.328" {
		t.Fatalf("lookup after replacing a corrupt entry = %q, %v", v, ok)
	}

	// An entry, or a directory, another user could write is not believed,
	// and nothing is written into such a directory.
	if err := os.Chmod(c.path(id), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.lookup(id); ok {
		t.Fatal("a group-readable entry was believed")
	}
	if err := os.Chmod(c.path(id), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(c.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.lookup(id); ok {
		t.Fatal("an entry in a world-writable directory was believed")
	}
	if err := c.store(id, "9.9.9"); err == nil {
		t.Fatal("stored into a world-writable directory")
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if e.Name()[0] == '.' {
			t.Fatalf("a temporary entry %s was left behind", e.Name())
		}
	}
}

// Two links to one binary are one identity; the link retargeted is another.
func TestVersionCacheIdentityFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l1, l2 := filepath.Join(dir, "l1"), filepath.Join(dir, "l2")
	for _, l := range []string{l1, l2} {
		if err := os.Symlink(a, l); err != nil {
			t.Fatal(err)
		}
	}
	id1, err1 := identify(l1)
	id2, err2 := identify(l2)
	if err1 != nil || err2 != nil || id1 != id2 {
		t.Fatalf("two links to one binary: %+v (%v), %+v (%v)", id1, err1, id2, err2)
	}
	if err := os.Remove(l2); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b, l2); err != nil {
		t.Fatal(err)
	}
	if id3, err := identify(l2); err != nil || id3 == id1 {
		t.Fatalf("a retargeted link kept its old identity: %+v (%v)", id3, err)
	}
}
