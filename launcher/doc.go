// Package launcher runs one governed session (Run): the checks that refuse
// before anything starts, the scratch tree, the loopback proxy, the pure
// launch plan, the spawn, the session, the wind-up and the attestation. It
// is kind-neutral: everything specific to one vendor lives in a sub-package
// per kind (launcher/claude, launcher/codex, launcher/b10x), and
// launcher/kinds is the table that names them.
//
// # The kind seam
//
// A kind and the run meet in launcher/kind, which both import and which
// says what a kind implements (Kind, Runner, Replayer and the optional
// interfaces) and what the run offers its session (Services). This package
// is the run's side: it reads a kind's Descriptor instead of its name,
// calls its Plan, spawns the plan, hands the child's pipes to the kind's
// Session and implements Services for it (services.go); the wire check
// (wirecheck.go) builds the WireView a session reads. No kind imports this
// package.
package launcher
