package main

import "github.com/metaharness/metaharness/exit"

// Refusal names of the verbs' own flags (exit 2); the rest come from the
// packages a verb calls.
const (
	RefuseToUnsupported      exit.Name = "to-unsupported"
	RefuseViewerColumnCount  exit.Name = "viewer-column-count"
	RefuseFromFormatUnknown  exit.Name = "from-format-unknown"
	RefuseOutputFile         exit.Name = "output-file"
	RefuseLiveUnavailable    exit.Name = "live-unavailable"
	RefuseLiveRunRefused     exit.Name = "live-run-refused"
	RefuseLiveNotCarried     exit.Name = "live-not-carried"
	RefuseNotInThisMilestone exit.Name = "not-in-this-milestone"
	RefusePromptTwice        exit.Name = "prompt-twice"
	RefuseStrayArguments     exit.Name = "stray-arguments"
	RefusePromptNotUTF8      exit.Name = "prompt-not-utf8"
	RefuseVerifyAlone        exit.Name = "verify-alone"
	RefuseKeyWithoutVerify   exit.Name = "key-without-verify"
	// project --attestation: given without --html, naming a run none of
	// the streams is, or not an attestation document.
	RefuseAttestationWithoutHTML exit.Name = "attestation-without-html"
	RefuseAttestationUnmatched   exit.Name = "attestation-unmatched"
	RefuseAttestationUnreadable  exit.Name = "attestation-unreadable"
)
