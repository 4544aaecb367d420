package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArchitectureListsEveryPackage fails when docs/architecture.md's
// package table and the module's packages disagree.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9/-]+)/` \\|").FindAllStringSubmatch(string(doc), -1) {
		listed = append(listed, m[1])
	}
	var built []string
	root := filepath.Join("..", "..")
	err = ownSources(root, func(path string) error {
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if rel != "." && !slices.Contains(built, rel) {
			built = append(built, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(built)
	slices.Sort(listed)
	if d := cmp.Diff(built, listed); d != "" {
		t.Errorf("docs/architecture.md and the module's packages disagree (-module +doc):\n%s", d)
	}
}

// ownSources calls visit with each Go file of the module's own code below
// root: no test file, nothing under testdata, node_modules or a dot
// directory.
func ownSources(root string, visit func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return visit(path)
	})
}

// module is the module's path, which its own imports begin with.
const module = "github.com/metaharness/metaharness/"

// ownImports is the module's import graph as its sources write it, each
// package by its folder below the root: the module's own packages each
// production file imports (no test file, as ownSources walks). Every file
// counts whatever its build constraint, so a rule below holds on every
// platform.
func ownImports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err := ownSources(root, func(path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		pkg = filepath.ToSlash(pkg)
		if _, ok := graph[pkg]; !ok {
			graph[pkg] = nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok && !slices.Contains(graph[pkg], rel) {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// linked is every package of the module pkg links, itself excluded.
func linked(graph map[string][]string, pkg string) []string {
	seen := map[string]bool{pkg: true}
	var out []string
	var walk func(string)
	walk = func(p string) {
		for _, q := range graph[p] {
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
				walk(q)
			}
		}
	}
	walk(pkg)
	slices.Sort(out)
	return out
}

// under reports whether pkg is dir or a package below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// internalReaches are the only imports above internal/ a package of
// internal/ may have, beside internal/*, record and exit.
var internalReaches = map[string][]string{
	// The early entry runs the processes a vendor starts of this binary
	// (the confined child's init, the command sandbox, the kinds' hooks)
	// before the heavy libraries initialise: it must call confine and the
	// table of hook programs itself, and both link nothing heavy (its own
	// test, TestEarlyEntrySkipsTheHeavyInits, holds that).
	"internal/earlyentry": {"confine", "launcher/kinds/hooks"},
	// The command sandbox's entry runs before every library's initialiser:
	// it may reach the sandbox alone, which imports the standard library
	// alone (TestEarlyEntrySkipsTheHeavyInits holds both).
	"internal/earlysandbox": {"confine/sandbox"},
}

// The run (the orchestrator) and the seam, the one package of the run a
// kind imports.
const (
	orchestrator = "launcher"
	seam         = "launcher/kind"
)

// kindsOf are the kinds, each by its folder launcher/<kind>: every folder
// below launcher/ that the kinds' tables import (a kind's hook program's
// parent too), but the seam.
func kindsOf(graph map[string][]string) []string {
	var out []string
	for _, table := range []string{"launcher/kinds", "launcher/kinds/hooks"} {
		for _, q := range graph[table] {
			parts := strings.Split(q, "/")
			if len(parts) < 2 || parts[0] != orchestrator {
				continue
			}
			k := orchestrator + "/" + parts[1]
			if k != seam && k != "launcher/kinds" && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestLayering holds the house's layering, which no compiler checks: the
// floor (attest) never links the proxy; only the kinds' tables and a
// kind's own packages import a kind; no kind links the run, only the seam
// (launcher/kind), which links neither the run nor any kind; the binary
// links nothing of testkit/; internal/ holds leaves that reach no higher
// than record and exit; the fleet client and its binary link nothing of
// the run.
func TestLayering(t *testing.T) {
	graph := ownImports(t)
	for _, p := range linked(graph, "cmd/auto-harness") {
		if !under(p, "autoharness") && !under(p, "internal") {
			t.Errorf("cmd/auto-harness links %s: the Auto Harness client and its binary link nothing of the module but autoharness/ and internal/", p)
		}
	}
	if slices.Contains(linked(graph, "attest"), "loopback") {
		t.Error("attest links loopback: the floor judges the record, and the proxy's types stay with the launcher (attest.Loopback carries their words)")
	}
	for _, p := range linked(graph, "cmd/metaharness") {
		if under(p, "testkit") {
			t.Errorf("cmd/metaharness links %s: testkit/ is never part of the release binary", p)
		}
	}
	kinds := kindsOf(graph)
	if len(kinds) == 0 {
		t.Fatal("the kinds' tables (launcher/kinds, launcher/kinds/hooks) import no kind; is the walk reading them?")
	}
	for _, q := range linked(graph, seam) {
		if q == orchestrator || slices.ContainsFunc(kinds, func(k string) bool { return under(q, k) }) {
			t.Errorf("%s links %s: the seam is what the kinds import of the run, so it links neither the run nor a kind", seam, q)
		}
	}
	for pkg := range graph {
		if !slices.ContainsFunc(kinds, func(k string) bool { return under(pkg, k) }) {
			continue
		}
		if slices.Contains(linked(graph, pkg), orchestrator) {
			t.Errorf("%s links %s, the run: a kind imports %s, the run's side of the seam, and never the run itself", pkg, orchestrator, seam)
		}
	}
	for pkg, imports := range graph {
		for _, q := range imports {
			for _, k := range kinds {
				// testkit/ is no product: its stand-ins may speak for a kind.
				if under(q, k) && !under(pkg, k) && pkg != "launcher/kinds" && pkg != "launcher/kinds/hooks" && !under(pkg, "testkit") {
					t.Errorf("%s imports %s: only launcher/kinds and launcher/kinds/hooks name a kind; reach it through them", pkg, q)
				}
			}
			if under(pkg, "internal") && !under(q, "internal") && q != "record" && q != "exit" && !slices.Contains(internalReaches[pkg], q) {
				t.Errorf("%s imports %s: internal/ holds shared leaves that import only internal/, record and exit (see internalReaches for the exceptions and why)", pkg, q)
			}
		}
	}
}

// TestVerbsReadTheInjectedEnvironment: only main reads the process's
// environment; every verb reads the one Main was given (env.vars), so
// that a caller of Main, a test included, decides what a verb sees.
func TestVerbsReadTheInjectedEnvironment(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil && fn.Name.Name == "main" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" {
					switch sel.Sel.Name {
					case "Environ", "Getenv", "LookupEnv":
						t.Errorf("%s: %s reads os.%s; read the environment Main was given (env.getenv, env.environ)", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
