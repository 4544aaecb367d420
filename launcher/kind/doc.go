// Package kind is the seam between the run and a kind, as database/sql/driver
// is to database/sql: what a kind (launcher/<kind>) implements, the values the
// run hands it (Spec, World, Plan, Services) and the shared helpers its plan
// and session build with. A kind imports this package and never launcher,
// the run, which imports it too; this package imports neither the run nor
// any kind. TestLayering (cmd/metaharness) holds all three.
//
// # Adding a kind
//
// A kind is one folder, launcher/<name>, and one row in the table of
// launcher/kinds. Its package implements, in the steps a kind is built:
//
//  1. Kind: Descriptor returns the kind as data (Descriptor): its Name on
//     the command line, the Binary looked up on the child's PATH
//     (ChildPath) and how to Install it, the Capabilities `capabilities
//     NAME` prints (its pinned versions, each control tier and decision
//     mode Delivered, Unverified or Absent, each command honoured or
//     refused, its vendor tool for each neutral operation), the Rules the
//     run's checks hold a spec to, its ContextChannel, its loopback
//     defaults (Upstream, TokenEnv, UpstreamHeader, ModelAPI, TokenFile),
//     the Memory files its loader reads (H11), how it carries a Catalogue,
//     and whether its plan confines its child (Confined). With that alone the
//     capabilities and doctor verbs work, and `run NAME` makes every check of
//     the spec and then refuses not-built.
//  2. Replayer: NewTranscript reads the vendor's raw record, line by line,
//     into Items (a Transcript, and an Ender if the record's end says
//     something), and CloseReason says how the stream closes after its
//     terminal record. C2 vectors and, with Descriptor.RecordFormat,
//     project --from read records through it.
//  3. Runner: Plan, a pure function from the Spec and the observed World
//     to the Plan (program, argv, the constructed environment, the scratch
//     files, the confinement and the attestation's claim), which C1
//     vectors pin; Resolve, a vendor tool call to the neutral operations
//     and subjects the frame decides; VendorTimeout, how long the vendor
//     waits for one decision; and NewSession, the Session that drives the
//     child: Drive reads its stdout to the terminal record (and, for a
//     child the run converses with, writes its stdin), Control applies the
//     kind's own commands to it.
//
// Beside those, as far as the vendor needs them: FlagProber and EnvChecker
// (doctor's checks of the launch's flags and of the caller's environment),
// SpecChecker (refusals of its own that read only the spec), FlagsKind (run
// flags that reach this kind only, KindFlags, which also take a field in
// launcher/kinds's Flags), Observer (a look at the binary before planning,
// into World.Vendor), Preflighter (the written scratch files put to the
// binary before the spawn), LoopbackClient and ModelProvider (the child
// reaches its model only through the loopback proxy), WireMatcher (a
// decision request held to the model's call as the proxy read it, H13),
// HookEndpoint (the vendor posts its hook to the run's decision endpoint
// itself, so that nothing starts per call); and, of its Session, Answerer (the child's own programs ask over the
// decision channel), Refuser (the child can refuse its launch after the
// spawn) and RecordChecker (requests held to the vendor's own record where
// no wire is seen).
//
// A hook program the vendor starts before each call (internal-hook) lives in
// launcher/<name>/hook, which imports neither this package nor the run, so
// that it starts lean, and takes one row in launcher/kinds/hooks. A kind's
// vectors are data: conformance/testdata/c1/<name> and c2/<name>.
//
// # What the run offers a session
//
// A Session drives one child from its spawn to the end of its stdout and
// returns the terminal record. The run keeps everything else and offers it
// as Services: the decision engine (frame.Engine: Observe, Request, Decide,
// the turns), Started and Emit into the event stream, Decide for a request
// of the decision channel, Perform for a catalogue call in-process
// (mcpserve's Server.Call on the checked contract: the same checks,
// decision and performers as mcp-serve), Stop for the child's process
// group, and the wire the proxy read (Wire, Verify, NotOnWire). The
// commands on stdin go to the engine, which hands the kind's own
// (interrupt, halt, steer, …) to Session.Control.
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
// # Helpers
//
// A kind's plan builds with SortedEnv, ShellQuote, ChildPath, JSONFile,
// DefaultSurface, Rules.OwnedServer, Confinement, CommandSandbox and
// LoginShellSandbox, and claims its attestation rows with
// AttestConfinement, ClaimGate, ClaimWire and EnvRow; its descriptor and
// Resolve build with StopOnlyCommands, Resolver, ResolveEntry and
// NativeOp; its transcript reads a line's kind with TopStrings and keeps
// what it does not map as Opaque; its session reads lines with EachLine
// (MaxVendorLine, LineTooLong), applies commands with StopOnly where the
// vendor reads no control line, and holds lines to the wire with
// RecordCheck, WireView and WireInput; its WireMatcher compares JSON as its vendor parses it
// (DecodeJSON, EqualJSON, NumbersAsDoubles, NumbersExact, DropNulls). The
// refusal names a kind shares with the run and the other kinds are
// declared here; a kind's own are in its package.
//
// The seam is interfaces rather than a table of functions because a kind is
// built in steps (descriptor first, then replays, then the run loop), and
// the optional interfaces say which steps are done where a verb needs one.
package kind
