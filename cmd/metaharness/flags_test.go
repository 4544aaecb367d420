package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/metaharness/metaharness/exit"
)

// model is the CLI's own kong model, as Main builds it.
func model(t *testing.T) *kong.Application {
	t.Helper()
	p, err := kong.New(&cli{}, kong.Name("metaharness"), vars())
	if err != nil {
		t.Fatal(err)
	}
	return p.Model
}

// positionals fills a verb's positional arguments with values it accepts.
func positionals(n *kong.Node) []string {
	var args []string
	for _, p := range n.Positional {
		if p.Passthrough {
			continue
		}
		v := "x"
		if e := p.Tag.Enum; e != "" {
			v = strings.Split(p.Enum, ",")[0]
		}
		args = append(args, v)
	}
	return args
}

// TestEveryVerbRefusesAnUnknownFlag: on every verb of the model (hidden ones
// too), an unknown flag before -- is a usage error naming it, wherever it
// stands among the arguments; nothing swallows it.
func TestEveryVerbRefusesAnUnknownFlag(t *testing.T) {
	for _, n := range model(t).Leaves(true) {
		verb := n.Path()
		pos := positionals(n)
		for _, args := range [][]string{
			append([]string{verb, "--no-such-flag"}, pos...),
			append(append([]string{verb}, pos...), "--no-such-flag"),
			append(append([]string{verb}, pos...), "--no-such-flag=1", "--"),
		} {
			var stdout, stderr bytes.Buffer
			code := Main(args, nil, &stdout, &stderr, nil)
			want := "metaharness: usage: unknown flag --no-such-flag"
			if code != exit.Refused || !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line starting %q", args, code, stderr.String(), want)
			}
			if stdout.Len() > 0 {
				t.Errorf("%q wrote stdout: %q", args, stdout.String())
			}
		}
	}
}

// TestNoFlagSplitsOnCommas: kong splits a repeatable flag's value on commas
// unless told not to, which would make `--context a,b.md` two files. Every
// repeatable flag of every verb takes each value whole.
func TestNoFlagSplitsOnCommas(t *testing.T) {
	for _, n := range model(t).Leaves(true) {
		for _, f := range n.Flags {
			if f.IsSlice() && f.Tag.Sep != -1 {
				t.Errorf("%s --%s splits its value on %q: tag it sep:\"none\"", n.Path(), f.Name, f.Tag.Sep)
			}
		}
	}
}

// TestGrammarOfOneVerb: the grammar built for one verb names each verb as
// kong's model of the whole CLI does, and its help and a usage error read
// exactly as that model's, so building one verb alone changes nothing a
// caller sees.
func TestGrammarOfOneVerb(t *testing.T) {
	for _, n := range model(t).Children {
		if _, whole := grammar(&cli{}, []string{n.Name}).(*cli); whole {
			t.Errorf("verb %s: no grammar of its own", n.Name)
			continue
		}
		for _, args := range [][]string{{n.Name, "--help"}, {n.Name, "--no-such-flag"}} {
			var whole, one bytes.Buffer
			p, err := kong.New(&cli{}, options(&whole, &whole)...)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() { _ = recover() }()
				if _, err := p.Parse(args); err != nil {
					whole.WriteString(exit.Line(exit.Refuse(exit.RefuseUsage, "%v; see metaharness --help", err)) + "\n")
				}
			}()
			Main(args, strings.NewReader(""), &one, &one, nil)
			if one.String() != whole.String() {
				t.Errorf("%v: one verb's grammar says\n%s\nthe whole CLI's\n%s", args, one.String(), whole.String())
			}
		}
	}
}
