package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
)

// declaredName finds a refusal name's declaration (exit.Name constants;
// TestVocabulary in package exit holds them to one form).
var declaredName = regexp.MustCompile(`(?m)^\s*Refuse\w+\s+(?:exit\.)?Name\s*=\s*"([a-z0-9-]+)"`)

// refusalNames lists every refusal name the module's sources declare, with
// the file declaring it.
func refusalNames(t *testing.T) map[exit.Name]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	names := map[exit.Name]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range declaredName.FindAllStringSubmatch(string(b), -1) {
			names[exit.Name(m[1])] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// unreachable are the names no invocation of this build can produce, each
// with the check that says so today. When the check stops holding, the name
// is reachable and needs its testscript like every other.
var unreachable = map[exit.Name]func() (bool, string){
	launcher.RefuseUnconfinedNotApplicable: func() (bool, string) {
		for _, k := range kinds.All() {
			if !k.Descriptor().Confined {
				return false, "run " + k.Descriptor().Name + " does not confine its child"
			}
		}
		return true, "every kind confines its child, so --unconfined always has a confinement to leave out"
	},
	launcher.RefuseDecisionsUnsupported: func() (bool, string) {
		for _, k := range kinds.All() {
			if _, built := k.(kind.Runner); !built {
				continue
			}
			for mode, s := range k.Descriptor().Capabilities.DecisionModes {
				if s == kind.Absent {
					return false, "run " + k.Descriptor().Name + " is built and --decisions " + mode + " is absent there"
				}
			}
		}
		return true, "every kind whose run is built has each decision mode (b10x decides through the loop's hooks file since issue 28)"
	},
	launcher.RefuseDecisionsUnverified: func() (bool, string) {
		for _, k := range kinds.All() {
			if _, built := k.(kind.Runner); !built {
				continue
			}
			for mode, s := range k.Descriptor().Capabilities.DecisionModes {
				if s == kind.Unverified {
					return false, "run " + k.Descriptor().Name + " is built and --decisions " + mode + " is unverified there"
				}
			}
		}
		return true, "every kind whose run is built delivers each decision mode it has, and the others refuse not-built first"
	},
}

var (
	scriptStderr  = regexp.MustCompile(`^\s*stderr\s+'(.*)'\s*$`)
	scriptRefusal = regexp.MustCompile(`metaharness: ([a-z0-9]+(?:-[a-z0-9]+)*): `)
)

// refusalsExpected are the refusal names a testscript expects on stderr
// right after a command it requires to exit exactly 2.
func refusalsExpected(script string) map[exit.Name]bool {
	out := map[exit.Name]bool{}
	last := ""
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			break // the archive's files begin
		}
		for _, cmd := range []string{"exitcode ", "exec ", "! exec "} {
			if strings.HasPrefix(line, cmd) {
				last = line
			}
		}
		m := scriptStderr.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(last, "exitcode 2 ") {
			continue
		}
		for _, c := range scriptRefusal.FindAllStringSubmatch(m[1], -1) {
			out[exit.Name(c[1])] = true
		}
	}
	return out
}

// TestEveryRefusalIsTriggered: every refusal name the module declares is
// triggered through the binary by a testscript case that expects exit 2 and
// its `metaharness: <code>: ` line on stderr (SPEC §13). A new name without
// such a case fails here.
func TestEveryRefusalIsTriggered(t *testing.T) {
	names := refusalNames(t)
	if len(names) < 50 {
		t.Fatalf("only %d refusal names found; is the walk reading the module?", len(names))
	}
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testscripts: %v", err)
	}
	triggered := map[exit.Name]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name := range refusalsExpected(string(b)) {
			triggered[name] = filepath.Base(f)
		}
	}
	var missing []string
	for name, at := range names {
		_, ok := triggered[name]
		check, exempt := unreachable[name]
		switch {
		case ok && exempt:
			t.Errorf("%s (%s) is triggered by %s and still listed as unreachable; drop it from the list", name, at, triggered[name])
		case exempt:
			if still, why := check(); !still {
				t.Errorf("%s (%s) is reachable now (%s): add a fail_*.txtar case that triggers it and drop it from the unreachable list", name, at, why)
			} else {
				t.Logf("%s: not reachable: %s", name, why)
			}
		case !ok:
			missing = append(missing, string(name)+" ("+at+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no testscript triggers the refusal %s: add a fail_*.txtar case expecting exitcode 2 and its stderr line", m)
	}
	for name := range unreachable {
		if _, ok := names[name]; !ok {
			t.Errorf("%s is listed as unreachable but no longer declared; drop it", name)
		}
	}
}
