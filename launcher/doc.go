// Package launcher runs one governed session (Run): the checks that refuse
// before anything starts, the scratch tree, the loopback proxy, the pure
// launch plan, the spawn, the session, the wind-up and the attestation. It
// is kind-neutral: everything specific to one vendor lives in a sub-package
// per kind (launcher/claude, launcher/codex, launcher/b10x), and
// launcher/kinds is the table that names them.
//
// # The kind seam
//
// A kind is a Kind: a Descriptor, which is data (its name, binary,
// capabilities, context channel, loopback defaults, raw record format), and
// as much of the kind as is built, said by the optional interfaces it
// implements:
//
//   - Runner: the run loop is built. Run calls Plan (pure; C1 vectors pin
//     it), spawns the plan (Spawn, plan in, child out), and hands the
//     child's pipes to the kind's Session, made by NewSession. A kind that is
//     not a Runner is refused not-built, after every check of its spec.
//   - Replayer: the kind's raw record can be read back without a run (C2
//     replays, project --from).
//   - FlagProber: doctor can put the launch's flags to the binary.
//
// A Session drives one child from its spawn to the end of its stdout and
// returns the terminal record. The run keeps everything else and offers it
// as Services: the decision engine (frame.Engine: Observe, Request, Decide,
// the turns), Started and Emit into the event stream, Decide for a request
// of the decision channel, Perform for a catalogue call in-process
// (mcpserve's Server.Call on the checked contract: the same checks,
// decision and performers as mcp-serve), and Stop for the child's process
// group. The commands on stdin go to the engine, which hands the kind's
// own (interrupt, halt, steer, …) to Session.Control.
//
// Two shapes of child fit the one seam. Claude Code is read: its Session
// maps stream-json from stdout, and the hook and mcp-serve it starts ask
// the run over the decision channel (internal/decide), answered by the
// Session as an Answerer. codex app-server is conversed with: its plan sets
// StdinPipe, and its Session writes JSON-RPC to Pipes.Stdin, answers the
// child's requests through the engine and Perform, and turns Control into
// control requests. Both keep what they exchange in Pipes.Transcript, which
// is the run's transcript (--retain-dir, the auditor).
//
// The seam is interfaces rather than a table of functions because a kind is
// built in steps (descriptor first, then replays, then the run loop), and
// the optional interfaces say which steps are done where a verb needs one.
package launcher
