package frame

import (
	"fmt"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/record"
)

// Resolution is what a vendor tool call means in the neutral vocabulary: the
// adapter's rendering read backwards (and, on the owned surface, a
// tool_invoke unwrapped to its entry's operation).
type Resolution struct {
	// Operations the call may perform; empty when the tool maps to none.
	Operations []Operation
	// Subjects the call acts on: "file:<path as written>" or
	// "proc:<program>".
	Subjects []string
	// Catalogue is set for the owned surface's catalogue questions
	// (tool_search, tool_describe), which perform nothing.
	Catalogue bool
}

// OperationNames lists the operations' names once each, in order, for
// tool.requested.operations.
func (r Resolution) OperationNames() []string {
	var out []string
	for _, o := range r.Operations {
		if !slices.Contains(out, o.Op) {
			out = append(out, o.Op)
		}
	}
	return out
}

// Warning codes the decision engine writes.
const (
	WarnNoFrameInForce       = "NO_FRAME_IN_FORCE"
	WarnUncoveredTool        = "UNCOVERED_TOOL"
	WarnRequestMutated       = "REQUEST_MUTATED"
	WarnPendingCallAbandoned = "PENDING_CALL_ABANDONED"
	// WarnNoEmbedder: ask mode, and stdin has ended, so no embedder can
	// answer any more; written once.
	WarnNoEmbedder = "NO_EMBEDDER"
)

// Verdict is what a frame says about one call: allow or deny (a frame never
// replaces or abstains), and the warning to write first, if any.
type Verdict struct {
	Decision record.Decision
	Warning  *record.Warning
}

// Verdict applies the frame-mode steps to one call of the vendor tool named
// tool (reference notes §4.2, steps 2–4; step 1, no frame, is the engine's):
// a catalogue question is allowed; a call that resolves to no operation is
// denied with UNCOVERED_TOOL; a call is allowed when any operation it
// resolves to is admitted and, for a write, the subject scope lets that
// operation act on every file it names; otherwise it is denied with a reason
// the model is told.
func (f *Frame) Verdict(tool string, r Resolution) Verdict {
	if r.Catalogue {
		return Verdict{Decision: record.AllowDecision()}
	}
	if len(r.Operations) == 0 {
		msg := fmt.Sprintf("%s resolves to no operation of the vocabulary a frame governs, so the frame denies it", tool)
		return Verdict{
			Decision: record.DenyDecision(msg + "; " + f.admittedPhrase()),
			Warning:  &record.Warning{Code: WarnUncoveredTool, Message: msg},
		}
	}
	var admitted []Operation
	for _, o := range r.Operations {
		if f.Admits(o) {
			admitted = append(admitted, o)
		}
	}
	if len(admitted) == 0 {
		return Verdict{Decision: record.DenyDecision(fmt.Sprintf("%s resolves to %s, which the frame does not admit; %s",
			tool, opList(r.Operations), f.admittedPhrase()))}
	}
	var refusals []string
	for _, o := range admitted {
		why := f.doc.Subjects.refuses(o, r.Subjects)
		if why == "" {
			return Verdict{Decision: record.AllowDecision()}
		}
		if !slices.Contains(refusals, why) {
			refusals = append(refusals, why)
		}
	}
	return Verdict{Decision: record.DenyDecision(fmt.Sprintf("%s: %s", tool, strings.Join(refusals, "; ")))}
}

// refuses says why the scope keeps operation o off the call's subjects, or
// "" when it does not. Only file.write and file.edit are scoped.
func (s SubjectScope) refuses(o Operation, subjects []string) string {
	if len(s) == 0 || (o.Op != "file.write" && o.Op != "file.edit") {
		return ""
	}
	files := 0
	for _, sub := range subjects {
		p, ok := strings.CutPrefix(sub, "file:")
		if !ok {
			continue
		}
		files++
		class, rule, err := s.Class(p)
		if err != nil {
			return fmt.Sprintf("%s refused: %v", o.Op, err)
		}
		switch {
		case class == WriteDenied:
			return fmt.Sprintf("%s of %q refused: the frame's subject scope denies writes there (rule %d, %q); the way in is a frame whose scope allows writes to that path",
				o.Op, p, rule+1, s[rule].Paths)
		case class == WritePartialOnly && o.Op == "file.write":
			return fmt.Sprintf("%s of %q refused: the frame's subject scope is partial-only there (rule %d, %q), which admits file.edit of what exists but not file.write; edit the file in place instead",
				o.Op, p, rule+1, s[rule].Paths)
		}
	}
	if files == 0 {
		return fmt.Sprintf("%s refused: the call names no file, so the frame's subject scope cannot be checked", o.Op)
	}
	return ""
}

func (f *Frame) admittedPhrase() string {
	if len(f.doc.Operations) == 0 {
		return "the frame admits no operation"
	}
	return "the frame admits " + opList(f.doc.Operations)
}

func opList(ops []Operation) string {
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = o.String()
	}
	return strings.Join(names, ", ")
}
