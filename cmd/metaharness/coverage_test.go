package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/metaharness/metaharness/conformance"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
)

// The anti-drift test. Every flag of `run`, as the CLI's own kong model
// has it, meets every kind in one of two ways:
//
//   - a C1 vector of that kind names it in "covers", and its plan (or
//     refusal) differs when the flag's value goes back to what the flag
//     gives by default, which the test checks by planning again;
//   - a testscript says `# covers: --flag …` right before a `metaharness
//     run KIND …` command that passes the flag, and shows what it does
//     there (its refusal on that kind, or its effect on the run).
//
// So a flag added to the CLI, or a kind added to the table, fails here
// until each pair is shown.

const c1Vectors = "../../conformance/testdata/c1"

// runFlag is one flag of run and the Spec fields it sets.
type runFlag struct {
	flag   *kong.Flag
	fields [][]int // index paths into a specView
}

// specView is a spec with each kind's own flags as plain fields, so that
// every flag's field has an index path.
type specView struct {
	kind.Spec
	Flags kinds.Flags
}

func viewOf(s kind.Spec) specView {
	v := specView{Spec: s, Flags: kinds.FlagsOf(&s)}
	v.KindFlags = nil
	return v
}

func (v specView) spec() kind.Spec {
	s := v.Spec
	s.KindFlags = v.Flags.Given()
	return s
}

func (f runFlag) name() string { return "--" + f.flag.Name }

// given reports whether the command-line token tok passes the flag.
func (f runFlag) given(tok string) bool {
	return tok == f.name() || strings.HasPrefix(tok, f.name()+"=") || (f.flag.Short != 0 && tok == "-"+string(f.flag.Short))
}

// specOf parses a run command line and maps it onto its Spec.
func specOf(t *testing.T, args ...string) *kind.Spec {
	t.Helper()
	var c cli
	p, err := kong.New(&c, kong.Name("metaharness"), vars(), kong.Exit(func(int) { t.Fatalf("%q asked kong to exit", args) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(append([]string{"run"}, args...)); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	s, err := c.Run.spec()
	if err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	return s
}

// sample is a value the flag takes that differs from its default.
func sample(f *kong.Flag) string {
	if f.IsBool() {
		return "--" + f.Name
	}
	for _, v := range strings.Split(f.Enum, ",") {
		if v != "" && v != f.Default {
			return "--" + f.Name + "=" + v
		}
	}
	kind, typ := f.Target.Kind(), f.Target.Type()
	if kind == reflect.Pointer {
		kind, typ = typ.Elem().Kind(), typ.Elem()
	}
	if typ == reflect.TypeOf(time.Duration(0)) {
		return "--" + f.Name + "=3s"
	}
	switch kind {
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "--" + f.Name + "=3"
	}
	return "--" + f.Name + "=sample"
}

// changedFields lists the index paths at which a and b differ.
func changedFields(a, b reflect.Value, path []int) [][]int {
	var out [][]int
	for i := range a.NumField() {
		p := append(slices.Clone(path), i)
		if a.Field(i).Kind() == reflect.Struct {
			out = append(out, changedFields(a.Field(i), b.Field(i), p)...)
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, p)
		}
	}
	return out
}

// runFlags reads run's flags off the kong model, each with the Spec fields
// it sets (found by parsing a sample value: no hand list).
func runFlags(t *testing.T) (map[string]runFlag, *kind.Spec) {
	t.Helper()
	var run *kong.Node
	for _, n := range model(t).Leaves(true) {
		if n.Path() == "run" {
			run = n
		}
	}
	if run == nil {
		t.Fatal("the kong model has no run verb")
	}
	base := specOf(t, "claude", "-p", "base")
	flags := map[string]runFlag{}
	for _, f := range run.Flags {
		if f.Name == "help" {
			continue
		}
		s := specOf(t, "claude", "-p", "base", sample(f))
		if f.Short == 'p' {
			s = specOf(t, "claude", "-p", "sample")
		}
		rf := runFlag{flag: f, fields: changedFields(reflect.ValueOf(viewOf(*base)), reflect.ValueOf(viewOf(*s)), nil)}
		if len(rf.fields) == 0 {
			t.Errorf("%s sets no field of kind.Spec: a flag the run never sees", rf.name())
		}
		flags[rf.name()] = rf
	}
	if len(flags) < 30 {
		t.Fatalf("only %d run flags read off the model", len(flags))
	}
	return flags, base
}

// alternatives are the values a field may take instead of the vector's:
// the flag's default and, for an enum, each of its values.
func alternatives(f runFlag, base *kind.Spec, path []int) []reflect.Value {
	def := reflect.ValueOf(viewOf(*base)).FieldByIndex(path)
	out := []reflect.Value{def}
	if f.flag.Enum == "" {
		return out
	}
	for _, v := range strings.Split(f.flag.Enum, ",") {
		out = append(out, reflect.ValueOf(v).Convert(def.Type()))
	}
	return out
}

// outcome is a vector's plan or refusal as bytes, nil when planning failed.
func outcome(v *conformance.C1Vector) []byte {
	p, r, err := conformance.PlanC1(v)
	if err != nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		P *kind.Plan
		R *conformance.C1Refusal
	}{p, r})
	return b
}

// c1Covered checks every vector's covers claims and returns the pairs
// (flag, kind) they prove.
func c1Covered(t *testing.T, flags map[string]runFlag, base *kind.Spec) map[[2]string]string {
	files, err := filepath.Glob(filepath.Join(c1Vectors, "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no C1 vectors under %s: %v", c1Vectors, err)
	}
	covered := map[[2]string]string{}
	for _, file := range files {
		v, err := conformance.LoadC1(file)
		if err != nil {
			t.Fatal(err)
		}
		want := outcome(v)
		for _, name := range v.Covers {
			f, ok := flags[name]
			if !ok {
				t.Errorf("%s covers %s, which is not a flag of run", v.ID, name)
				continue
			}
			shown := false
			for _, path := range f.fields {
				if reflect.DeepEqual(reflect.ValueOf(viewOf(v.Spec.Spec)).FieldByIndex(path).Interface(), reflect.ValueOf(viewOf(*base)).FieldByIndex(path).Interface()) {
					t.Errorf("%s covers %s, and its spec leaves it at the default", v.ID, name)
				}
				for _, alt := range alternatives(f, base, path) {
					w := *v
					view := viewOf(w.Spec.Spec)
					reflect.ValueOf(&view).Elem().FieldByIndex(path).Set(alt)
					w.Spec.Spec = view.spec()
					if got := outcome(&w); got != nil && !bytes.Equal(got, want) {
						shown = true
					}
				}
			}
			if !shown {
				t.Errorf("%s covers %s, but its plan is the same whatever the flag's value: the flag has no effect on it", v.ID, name)
				continue
			}
			covered[[2]string{name, v.Spec.Kind}] = "C1 " + v.ID
		}
	}
	return covered
}

var (
	coversLine = regexp.MustCompile(`^#\s*covers:\s*(.+)$`)
	runCommand = regexp.MustCompile(`\bmetaharness run ([a-z0-9]+)\b`)
)

// scriptCovered reads the testscripts' covers lines, each holding for the
// next run command.
func scriptCovered(t *testing.T, flags map[string]runFlag) map[[2]string]string {
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testscripts: %v", err)
	}
	covered := map[[2]string]string{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(file)
		var pending []string
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
				break
			}
			if m := coversLine.FindStringSubmatch(line); m != nil {
				pending = append(pending, strings.Fields(m[1])...)
				continue
			}
			m := runCommand.FindStringSubmatch(line)
			if m == nil || strings.HasPrefix(line, "#") {
				continue
			}
			for _, name := range pending {
				f, ok := flags[name]
				if !ok {
					t.Errorf("%s:%d covers %s, which is not a flag of run", base, i+1, name)
					continue
				}
				if !slices.ContainsFunc(strings.Fields(line), f.given) {
					t.Errorf("%s:%d covers %s, and the run command after it does not pass it", base, i+1, name)
					continue
				}
				covered[[2]string{name, m[1]}] = base
			}
			pending = nil
		}
		if len(pending) > 0 {
			t.Errorf("%s covers %s with no run command after it", base, strings.Join(pending, " "))
		}
	}
	return covered
}

// TestEveryRunFlagIsCovered is the anti-drift test (see the top of the file).
func TestEveryRunFlagIsCovered(t *testing.T) {
	flags, base := runFlags(t)
	byC1 := c1Covered(t, flags, base)
	byScript := scriptCovered(t, flags)
	var missing []string
	for _, k := range kinds.All() {
		kind := k.Descriptor().Name
		for name := range flags {
			pair := [2]string{name, kind}
			if byC1[pair] == "" && byScript[pair] == "" {
				missing = append(missing, name+" on "+kind)
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s: no C1 vector shows its effect on the plan and no testscript shows what it does there; add \"covers\" to a vector or `# covers: %s` before a run command in a testscript", m, strings.Fields(m)[0])
	}
}
