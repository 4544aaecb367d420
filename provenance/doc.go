// Package provenance is a run's signed statement: an in-toto Statement v1
// whose subjects are the sha256 digests of what the run produced and read
// (the event stream, the attestation, the transcript, the frame, the
// catalogue and its scratch copy, each --context file) and whose predicate
// is how the run ended and the attestation's verdicts and rows, sealed in a
// DSSE envelope, signed with an ed25519 or ECDSA P-256 key, or unsigned and
// saying so. Verify is `audit --verify`: the signature, then every
// subject's digest recomputed from its file.
//
// The envelope and its signatures are go-securesystemslib's (dsse,
// signerverifier), the field's own implementation, so that what a run
// writes is what the in-toto tools read; the statement is our own Go type
// of the v1 layer's four fields, because in-toto's Go types are protobuf
// messages whose JSON form is deliberately unstable and whose predicate is
// a struct of float64s. The tests hold our bytes to those Go types and to
// OpenSSL.
package provenance
