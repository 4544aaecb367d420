// Package frame is the frame document, its digest, and the engine that
// decides every tool call of a run and applies its stdin commands.
//
// A frame (metaharness.frame/1) is the sealed enforcement half of one step of
// an embedder's workflow: the operations it admits and where writes may act.
// Load, Parse and Seal read and seal one; LoadForRun hands the CLI a refusal
// it can print without looking inside.
//
// The Engine decides calls in one of three modes (frame, ask, observe). Seams
// present calls with Request or Decide from their own goroutines, the vendor
// reader reports its record of calls with Observe and turn boundaries with
// StartTurn and EndTurn, and stdin lines go to HandleLine. The engine writes
// tool.requested, tool.decided, warning, turn and command.result events and
// keeps the five ordering rules:
//
//  1. a decision is written to the vendor before any control (interrupt,
//     halt) is applied: answers are delivered under the engine's lock, and
//     pending calls are denied before Config.Control runs;
//  2. metaharness's deadline is strictly inside the vendor's timeout
//     (DeadlineFor), and on expiry metaharness denies the call itself;
//  3. a decision answers exactly one request, keyed by call_id and the
//     request digest: UNKNOWN_CALL, TOO_LATE, REQUEST_MUTATED;
//  4. interrupt is a legal answer to a pending call;
//  5. several calls may pend at once and be answered in any order, each
//     deadline armed when its tool.requested is written.
//
// The C3 vectors in conformance/testdata/c3 pin these rules end to end.
package frame
