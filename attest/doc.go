// Package attest reads a finished run's event stream and says which
// hermeticity controls held: the fourteen rows (H1a, H1b, H2–H13), the floor
// that turns them into a verdict, the audit report printed on stderr, the
// external auditor seam, and the run's exit code (SPEC §9).
//
// Evaluation reads only two things: the recorded stream (so it serves every
// kind, live or replayed) and Launch, the few facts the launch declared that
// a stream cannot carry (the declared plugin set, the credential posture, the
// planned cwd and MCP servers, the pins). The attestation block in
// session.started is metaharness's own claim: a row it lists as unavailable
// is a gap, a launch row it lists as imposed is ok, and a record row is
// always judged from what the vendor itself recorded.
//
// That claim has one author's tool: a Claim, which a kind's plan starts
// (Impose, Unavailable, Declare for each row it speaks to), the confinement
// completes (Enforce, Withdraw) and Attestation renders. Rows are RowID
// values, so a claim can only name a row this package lists.
//
// The order a run calls it in:
//
//	aud, err := attest.CheckPairing(p)        // before anything is started; err is exit 2
//	walk, err := attest.WalkMemory(shapes, dir) // before the spawn
//	claim := attest.NewClaim(mode, decisions) // the kind's plan claims its rows
//	attest.AttestWorkdir(wd, claim)           // H7 and H11
//	att := claim.Attestation()                // session.started.hermetic
//	tap := &attest.Tap{}                      // record.NewWriter(io.MultiWriter(stdout, tap), id)
//	... the session ...
//	res, err := aud.Run(ctx, transcript, w)   // re-check, then invoke; err is exit 2
//	ev := tap.Evaluate(launch)                // or Evaluate(ReadStream(file)) for a recorded stream
//	code, err := ev.Conclude(stderr, launch.AuditOwed(), res, childExit)
//	doc := ev.Document(kind, launch.AuditOwed(), res, childExit) // --attestation FILE
//
// A refusal after the session (the re-check, or an auditor that says
// nothing) ends the run with exit 2 and no report: the audit was not done.
package attest
