// Package conformance holds metaharness's vectors as data and the
// `conformance` verb that checks them, with no model, no network and no
// credential. Each vector is a file named for what it proves; a new file is
// a new vector, no code needed.
//
//   - C1 launch vectors (testdata/c1/<kind>/*.json): a spec and an observed
//     world in, the launch plan (or the refusal) out. Planning is pure, so
//     CheckC1 compares byte for byte; it plans through the kind's
//     kind.Runner found in launcher/kinds.
//   - C2 replay vectors (testdata/c2/<kind>/*.in.jsonl beside
//     *.expected.jsonl): a real recorded vendor transcript and the event
//     stream the kind's own reader (kind.Replayer) makes of it, closed as
//     a run closes it. Replay is also project --from's reader.
//   - C3 control vectors (testdata/c3/*.json): adapter-neutral sequences of
//     pseudo-events played against the decision engine with a manual clock
//     (decisions, modes, deadlines, the five ordering rules, command
//     refusals).
//
// Check runs a kind's C1 and C2 vectors and every C3 vector, all embedded
// in the binary, so an installed build is checked against the same files
// the tests read; a kind with no C1 or C2 vector is refused
// (no-vector-suite) rather than passed.
//
// The sub-packages serve the tests of the real vendors: scripted holds the
// fake Anthropic Messages and OpenAI Responses upstreams, vendortest runs
// the pinned CLIs inside the loopback-only namespace, and live is the
// built-in governed session of `conformance --live` and `make demo`.
package conformance
