package conformance

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/metaharness/metaharness/exit"
)

// The C1 and C2 vectors built into the binary, one directory per kind, so
// that `metaharness conformance KIND` checks an installed build against the
// same files the tests do.
//
//go:embed testdata/c1 testdata/c2
var kindFiles embed.FS

// RefuseNoVectorSuite: the build carries no launch or replay vector for the kind,
// so a pass would claim what nothing checked.
const RefuseNoVectorSuite exit.Name = "no-vector-suite"

// Result is one vector's outcome.
type Result struct {
	Tier string // c1, c2 or c3
	ID   string
	Err  error // nil: it held
}

// Report is a suite's outcome, in the order the vectors ran: C1, C2, C3.
type Report struct {
	Kind    string
	Results []Result
}

// Failed counts the vectors that did not hold.
func (r *Report) Failed() int {
	n := 0
	for _, x := range r.Results {
		if x.Err != nil {
			n++
		}
	}
	return n
}

// Breaking counts the C1 and C2 failures: the vendor (or our reading of it)
// moved. A C3 failure is metaharness's own rules, not a vendor change.
func (r *Report) Breaking() int {
	n := 0
	for _, x := range r.Results {
		if x.Err != nil && x.Tier != "c3" {
			n++
		}
	}
	return n
}

// Check runs every vector the binary carries for kind: its C1 launch plans,
// its C2 replays, then the adapter-neutral C3 control vectors. Nothing is
// spawned and nothing leaves the process.
func Check(kind string) (*Report, error) {
	c1, _ := fs.Glob(kindFiles, "testdata/c1/"+kind+"/*.json")
	c2, _ := fs.Glob(kindFiles, "testdata/c2/"+kind+"/*.in.jsonl")
	if len(c1)+len(c2) == 0 {
		return nil, exit.Refuse(RefuseNoVectorSuite, "conformance %s: this build carries no launch (C1) or replay (C2) vector for %s, so there is nothing of the adapter to check; `run %s` is not built either", kind, kind, kind)
	}
	r := &Report{Kind: kind}
	for _, name := range c1 {
		id := strings.TrimSuffix(path.Base(name), ".json")
		b, err := kindFiles.ReadFile(name)
		if err == nil {
			var v *C1Vector
			if v, err = ParseC1(id, b); err == nil {
				err = CheckC1(v)
			}
		}
		r.Results = append(r.Results, Result{Tier: "c1", ID: id, Err: err})
	}
	for _, name := range c2 {
		id := strings.TrimSuffix(path.Base(name), ".in.jsonl")
		in, err := kindFiles.ReadFile(name)
		if err == nil {
			var want []byte
			if want, err = kindFiles.ReadFile(strings.TrimSuffix(name, ".in.jsonl") + ".expected.jsonl"); err == nil {
				err = CompareC2(kind, id, in, want)
			}
		}
		r.Results = append(r.Results, Result{Tier: "c2", ID: id, Err: err})
	}
	vs, err := C3Vectors()
	if err != nil {
		return nil, fmt.Errorf("the built-in C3 vectors: %w", err)
	}
	for _, v := range vs {
		r.Results = append(r.Results, Result{Tier: "c3", ID: strings.TrimPrefix(v.ID, "c3/"), Err: v.Check()})
	}
	return r, nil
}

// WriteText prints a line per vector, "pass TIER ID" or "FAIL TIER ID —
// detail" (a detail's further lines indented beneath), then the count.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, x := range r.Results {
		if x.Err == nil {
			fmt.Fprintf(&b, "pass %s %s\n", x.Tier, x.ID)
			continue
		}
		first, rest, _ := strings.Cut(x.Err.Error(), "\n")
		fmt.Fprintf(&b, "FAIL %s %s — %s\n", x.Tier, x.ID, first)
		for _, l := range strings.Split(rest, "\n") {
			if l != "" {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
	}
	fmt.Fprintf(&b, "%d vectors, %d failed — no model, no network, no credential\n", len(r.Results), r.Failed())
	_, err := io.WriteString(w, b.String())
	return err
}

// ContractResult is the one line `conformance --contract` prints: what a
// consumer of the event stream (metaharness.event/1) learns of a provider
// (the adapter at its pin).
type ContractResult struct {
	BreakingChanges int    `json:"breaking_changes"`
	Checked         int    `json:"checked"`
	Consumer        string `json:"consumer"`
	Failed          int    `json:"failed"`
	Kind            string `json:"kind"`
	Provider        string `json:"provider"`
}

// Contract is the report as a ContractResult; provider is "<kind> <pin>".
func (r *Report) Contract(provider string) ContractResult {
	return ContractResult{
		BreakingChanges: r.Breaking(), Checked: len(r.Results), Consumer: "metaharness.event/1",
		Failed: r.Failed(), Kind: "contract_result", Provider: provider,
	}
}
