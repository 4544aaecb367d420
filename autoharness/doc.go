// Package autoharness is a client of the Auto Harness control plane, the
// fleet that runs metaharness on its hosts as a session's Command. It is
// what an operator's tool or a CI job uses to hand the fleet work: create,
// read, cancel, resume and list sessions; start, follow and release a
// principal's session drain; list, pause, drain and activate repositories;
// list the provider and command catalogues; and send any other request of
// the API as it is (Client.Request).
//
// A call returns once the control plane has accepted or answered it; it
// never waits for an agent session to finish.
//
// The rules it keeps whatever the caller does:
//
//   - A credential (an API key, or an admin login's cookie) travels only
//     over https, or over plain http to a loopback host when the caller
//     says AllowInsecureHTTP; a private-network address is not loopback,
//     and no name is looked up to decide it.
//   - Every request has one deadline that covers connecting, the answer's
//     headers and reading its whole body, and it holds even against a
//     transport that ignores cancellation (RequestTimeoutError).
//   - Nothing is retried: an ambiguous POST is the caller's to repeat, with
//     an idempotency key where the route takes one.
//   - A redirect never carries the credential to another origin and never
//     leads from https to http.
//   - Records are kept as the server sent them (Raw, key order and all),
//     beside typed fields for what this package reads itself, so a caller
//     can print a record exactly.
//
// Providers, commands and repositories may be named instead of given by
// id (TargetRef, RepositoryRef): a call lists each catalogue it needs at
// most once, none when every reference is an id, and an unknown or
// ambiguous name is an *Error whose message never shows the ids that
// matched.
package autoharness
