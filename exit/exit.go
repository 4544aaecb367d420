// Package exit holds the one exit-code table every verb returns through
// (SPEC §3.2) and the refusal error that maps to code 2.
//
// A refusal is metaharness declining to do its job; it is never a verdict
// about a run, which is why it has its own code and its own error type.
package exit

import (
	"errors"
	"fmt"
)

// Code is a process exit status with the meaning SPEC §3.2 gives it.
type Code int

const (
	// OK: it ran and every gating verdict is ok (free verbs: succeeded).
	OK Code = 0
	// Gap: a gating row is gap, the auditor said 1, a conformance vector
	// failed, or doctor found a fault.
	Gap Code = 1
	// Refused: metaharness refused or could not do its job. Never a verdict.
	Refused Code = 2
	// Unknown: nobody found out (a gating row is unk, the auditor said 3, or
	// the child died with no terminal record). Not a softer Gap.
	Unknown Code = 3
	// Quota: the model API would not serve the account (a 429, a
	// rate_limit_error, an insufficient_quota) and the run was stopped at
	// its first such answer. Not a verdict about the controls, and not
	// metaharness failing its job: the same session may succeed after a
	// cooldown, or on another account.
	Quota Code = 4
)

// Meanings say what each code means, in the words of README.md's exit
// table (TestREADMEExitTable holds the two together), which follow the
// seed: a run owes a verdict only when it is audited, so a run without an
// audit never exits 1, and its gaps are in its attestation and summary.
var Meanings = map[Code]string{
	OK:      "it ran and every gating verdict is ok; a run without an audit (no `--audit`, no `--hermetic strict`): its session ended with a terminal record that is not an error (free verbs: succeeded)",
	Gap:     "a gap: in an audited run a gating row is `gap` or the auditor said 1; a conformance vector failed; `doctor` found a fault. A run without an audit never exits 1: its gaps are in the attestation and the run summary (`control_verdict`)",
	Refused: "metaharness refused or could not do its job: every refusal, every unbuilt option, every I/O failure. Never a verdict",
	Unknown: "nobody found out: in an audited run a gating row is `unk`, the auditor said 3; the child died with no terminal record or with a failed one; a signal or the embedder's `halt` or `interrupt` stopped the session; or the model API never served it (unreachable, refusing the request, rejecting the key). One `metaharness: <outcome>: …` line on stderr says which. Not a softer 1",
	Quota:   "`run` only: the model API would not serve the account: a 429 that `--throttle-budget` does not cover (a longer wait asked, or the budget spent), `insufficient_quota`, a quota error inside a stream; one `metaharness: usage-limit: …` line says which. Not a verdict of the controls: the same task may succeed after a cooldown or on another account",
}

// Name is a refusal's code, spelled as the seed spells it
// (catalogue-malformed, …). Each package declares the names it refuses with
// in one const block, each as Refuse<Code> in CamelCase, where the first
// word of the code may be left out when it is the package's own
// (mcpserve.RefuseMalformed is catalogue-malformed); TestVocabulary holds
// every package to that and to the seed.
type Name string

// The names every verb may refuse with.
const (
	// RefuseUsage: the command line does not parse, or asks for what no
	// flag means.
	RefuseUsage Name = "usage"
	// RefuseNotBuilt: a verb, kind or option this build does not have yet.
	RefuseNotBuilt Name = "not-built"
)

// Refusal is an error that ends a verb with Refused. Name is its code;
// Message says what, which flag or path, why, and what to do instead.
type Refusal struct {
	Name    Name
	Message string
	Err     error // optional cause, for errors.Is/As
}

func (r *Refusal) Error() string { return string(r.Name) + ": " + r.Message }

func (r *Refusal) Unwrap() error { return r.Err }

// Refuse builds a Refusal with a formatted message.
func Refuse(name Name, format string, args ...any) *Refusal {
	return &Refusal{Name: name, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds a Refusal that keeps err as its cause.
func Wrap(name Name, err error, format string, args ...any) *Refusal {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Refusal{Name: name, Message: msg, Err: err}
}

// Within builds a Refusal whose message already says err where it belongs
// (before the remedy, say), and keeps err as its cause.
func Within(name Name, err error, format string, args ...any) *Refusal {
	return &Refusal{Name: name, Message: fmt.Sprintf(format, args...), Err: err}
}

// Line renders err as the single stderr line SPEC §3.2 prescribes:
// "metaharness: <code>: <message>". An error that is not a Refusal is an I/O
// or internal failure and is named "io".
func Line(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return "metaharness: " + string(r.Name) + ": " + r.Message
	}
	return "metaharness: io: " + err.Error()
}

// Worst returns the code that outranks the others: Gap over Unknown over OK.
// Refused is not a verdict and is handled before verdicts are combined.
func Worst(codes ...Code) Code {
	out := OK
	for _, c := range codes {
		switch {
		case c == Gap:
			return Gap
		case c == Unknown:
			out = Unknown
		}
	}
	return out
}
