package launcher

import "github.com/metaharness/metaharness/exit"

// Refusal names of a run (exit 2). Those a kind shares with the run are in
// launcher/kind, a kind's own in launcher/<kind>.
const (
	// CheckSpec: a flag the kind cannot honour, or a combination that
	// cannot mean what it says.
	RefuseNoPrompt                      exit.Name = "no-prompt"
	RefuseAddDirDenied                  exit.Name = "add-dir-denied"
	RefuseScratchCWDNeedsCWD            exit.Name = "scratch-cwd-needs-cwd"
	RefuseAllowProgramNeedsOwnedSurface exit.Name = "allow-program-needs-owned-surface"
	RefuseDecisionsUnsupported          exit.Name = "decisions-unsupported"
	RefuseCredentialsUnsupported        exit.Name = "credentials-unsupported"
	RefuseTokenSourceConflict           exit.Name = "token-source-conflict"
	RefuseTokenSourceWithoutLoopback    exit.Name = "token-source-without-loopback"
	RefuseAllowEgressNeedsLoopback      exit.Name = "allow-egress-needs-loopback"
	RefuseUnconfinedNotApplicable       exit.Name = "unconfined-not-applicable"
	RefuseOutputFinalNeedsEvents        exit.Name = "output-final-needs-events"
	RefuseOutputStatusNeedsRecords      exit.Name = "output-status-needs-records"
	// RefuseThrottleBudget: a negative --throttle-budget, or one given
	// where no loopback proxy carries the model traffic to wait within.
	RefuseThrottleBudget exit.Name = "throttle-budget"
	RefuseURLInvalid     exit.Name = "url-invalid"
	RefuseURLNotHTTPS    exit.Name = "url-not-https"

	// Before anything starts: the world does not allow the run.
	RefuseCWDNotADirectory exit.Name = "cwd-not-a-directory"
	// RefuseCWDHoldsLaunch: the child may write --cwd, and it holds what a
	// later run starts (the vendor binary, a directory on the child's PATH,
	// metaharness itself or its cache).
	RefuseCWDHoldsLaunch exit.Name = "cwd-holds-launch"
	// RefuseRecordInWritableTree: a place the run writes a record to lies
	// in a tree the child may write (--cwd), so the agent could replace it.
	RefuseRecordInWritableTree exit.Name = "record-in-writable-tree"
	RefuseHideNotAbsolute      exit.Name = "hide-not-absolute"
	RefuseDecisionsUnverified  exit.Name = "decisions-unverified"
	RefuseAttestationFile      exit.Name = "attestation-file"
	RefuseRetainDir            exit.Name = "retain-dir"
	RefuseEventsFile           exit.Name = "events-file"
	RefuseRecordsDir           exit.Name = "records-dir"
	// A fleet's per-session places (EnvSummaryFile, EnvArtifactsDir).
	RefuseSummaryFile    exit.Name = "summary-file"
	RefuseArtifactsDir   exit.Name = "artifacts-dir"
	RefuseVendorNotFound exit.Name = "vendor-not-found"
	RefuseVersionUnknown exit.Name = "version-unknown"
	RefuseVersionOffPin  exit.Name = "version-off-pin"

	// Setting the run up failed.
	RefuseScratchUnavailable exit.Name = "scratch-unavailable"
	RefuseMemoryWalk         exit.Name = "memory-walk"
	RefuseDecisionSocket     exit.Name = "decision-socket"
	RefuseSpawn              exit.Name = "spawn"
	// A limit of the user's or the host's (processes, namespaces, open
	// files) was reached, wherever the run met it (hostlimit.go).
	RefuseHostLimit exit.Name = "host-limit"

	// The run was stopped before its spawn, or could not keep its record
	// whole: a stdout whose reader went away, an --events file that could no
	// longer be written (RefuseEventsFile).
	RefuseStopped      exit.Name = "stopped"
	RefuseStdoutClosed exit.Name = "stdout-closed"
)
