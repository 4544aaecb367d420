package exit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/internal/spelling"
)

// The documents that spell refusal codes: the seed wins, the reference
// notes on the adapters carry the rest (SPEC §3.2).
var seedDocs = []string{
	"/work/shared/seeds/metaharness-cli-reference.txt",
	"/work/shared/reference/metaharness-cli-adapters.md",
}

type declared struct {
	ident, value, pkg, at string
}

// vocabulary reads every Name constant the module declares and every call
// that refuses with a string literal instead of one.
func vocabulary(t *testing.T) (names []declared, blocks map[string]int, literals []string) {
	t.Helper()
	blocks = map[string]int{}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		inExit := f.Name.Name == "exit"
		isName := func(e ast.Expr) bool {
			switch x := e.(type) {
			case *ast.Ident:
				return inExit && x.Name == "Name"
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && id.Name == "exit" && x.Sel.Name == "Name"
			}
			return false
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			counted := false
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type == nil || !isName(vs.Type) {
					continue
				}
				if !counted {
					blocks[pkg]++
					counted = true
				}
				for i, id := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Errorf("%s: %s is not a string literal", fset.Position(id.Pos()), id.Name)
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					names = append(names, declared{id.Name, v, pkg, fset.Position(id.Pos()).String()})
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var fn string
			switch x := call.Fun.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "exit" {
					fn = x.Sel.Name
				}
			case *ast.Ident:
				if inExit {
					fn = x.Name
				}
			}
			if fn != "Refuse" && fn != "Wrap" {
				return true
			}
			if _, ok := call.Args[0].(*ast.BasicLit); ok {
				literals = append(literals, fset.Position(call.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, blocks, literals
}

// TestVocabulary holds the refusal names to one vocabulary: every refusal
// names a declared Name (never a string literal), each package declares its
// names in one const block, each as Refuse<Code> (the code's first word may
// be the package's and left out), each code declared once, and none spelled
// a little differently from a code the seed spells.
func TestVocabulary(t *testing.T) {
	names, blocks, literals := vocabulary(t)
	if len(names) < 50 {
		t.Fatalf("only %d refusal names found; is the walk reading the module?", len(names))
	}
	for _, at := range literals {
		t.Errorf("%s: refuses with a string literal; declare the name in the package's Refuse const block", at)
	}
	for pkg, n := range blocks {
		if n > 1 {
			t.Errorf("%s declares its refusal names in %d const blocks, not one", pkg, n)
		}
	}
	byValue := map[string]declared{}
	for _, d := range names {
		if prev, ok := byValue[d.value]; ok {
			t.Errorf("%q is declared twice: %s (%s) and %s (%s); use the first", d.value, prev.ident, prev.at, d.ident, d.at)
		}
		byValue[d.value] = d
		if !schemeFits(d.ident, d.value) {
			t.Errorf("%s: %s = %q does not follow Refuse<Code>", d.at, d.ident, d.value)
		}
	}

	seed := seedCodes(t)
	var ours []string
	for _, d := range names {
		if seed[d.value] {
			continue
		}
		ours = append(ours, d.value)
		for s := range seed {
			if len(s) > 6 && spelling.Distance(s, d.value) <= 2 {
				t.Errorf("%s: %q is not in the seed, which spells %q; a refusal names its code exactly as the seed spells it", d.at, d.value, s)
			}
		}
	}
	sort.Strings(ours)
	t.Logf("%d refusal names, %d spelled by the seed; this build's own: %s", len(names), len(names)-len(ours), strings.Join(ours, " "))
}

// schemeFits: ident is "Refuse" and the code in CamelCase (a word may be
// all capitals, as URL and CWD are), the code's first word optional.
func schemeFits(ident, value string) bool {
	rest, ok := strings.CutPrefix(ident, "Refuse")
	if !ok || rest == "" || rest[0] < 'A' || rest[0] > 'Z' {
		return false
	}
	whole := strings.ReplaceAll(value, "-", "")
	_, tail, _ := strings.Cut(value, "-")
	got := strings.ToLower(rest)
	return got == whole || (tail != "" && got == strings.ReplaceAll(tail, "-", ""))
}

// seedCodes are the hyphenated words of the seed documents: refusal codes
// and much else, which only makes the misspelling check stricter.
func seedCodes(t *testing.T) map[string]bool {
	words := regexp.MustCompile(`[a-z0-9]+(?:-[a-z0-9]+)+`)
	out := map[string]bool{}
	for _, p := range seedDocs {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			t.Skipf("%s is not on this machine; the vocabulary is checked where the seed is", p)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words.FindAllString(string(b), -1) {
			out[w] = true
		}
	}
	return out
}
