package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/contextfile"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
)

// inputs are what the checks read from the caller's files, before anything
// is started.
type inputs struct {
	auditor  *attest.Auditor // nil when no audit was asked for
	frame    *frame.Frame    // nil without --frame
	contract *mcpserve.Contract
	context  []contextfile.File
}

// check is the first phase: pairing and applicability, then the caller's
// files (the frame, the tool contract, the context files, the cwd). Every
// failure is a refusal and nothing has been started.
func (r *run) check(ctx context.Context) error {
	s := r.spec
	var err error
	if r.in.auditor, err = attest.CheckPairing(r.pairing()); err != nil {
		return err
	}
	if err := checkSpec(s, r.d); err != nil {
		return err
	}
	if r.checker != nil {
		if err := r.checker.CheckSpec(s); err != nil {
			return err
		}
	}
	if s.ThrottleBudget != nil && !proxied(s, r.kind) {
		return exit.Refuse(RefuseThrottleBudget, "--throttle-budget %v: no loopback proxy carries this run's model traffic (%s), so nothing would wait within it; drop the flag, or let the proxy carry the traffic (--credentials loopback or api-key, or none with --model-endpoint)", *s.ThrottleBudget, noProxyWhy(s, r.kind))
	}
	if s.Frame != "" {
		if r.in.frame, err = frame.LoadForRun(s.Frame); err != nil {
			return err
		}
	}
	if err := frame.CheckMode(s.Decisions, r.in.frame); err != nil {
		return err
	}
	if err := checkOutputPaths(s); err != nil {
		return err
	}
	if s.StrictCatalogue && r.d.Catalogue.NotCarried != "" {
		return exit.Refuse(mcpserve.RefuseNotCarried, "--strict-catalogue holds a --catalogue to this build's performers, and %s carries none: %s", s.Kind, r.d.Catalogue.NotCarried)
	}
	if err := r.checkStatement(); err != nil {
		return err
	}
	if err := r.startTelemetry(); err != nil {
		return err
	}
	if s.Catalogue != "" {
		if r.in.contract, err = mcpserve.LoadContract(s.Catalogue); err != nil {
			return err
		}
		if err := r.in.contract.CheckFor(r.d.Catalogue, s.AllowProgs); err != nil {
			return err
		}
		warnings, err := r.in.contract.CheckPerformed(s.StrictCatalogue)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintln(r.io.Stderr, w)
		}
	}
	if len(s.Context) > 0 {
		if r.in.context, err = contextfile.Load(s.Cwd, s.Context); err != nil {
			return err
		}
	}
	if s.Cwd != "" {
		if fi, err := os.Stat(s.Cwd); err != nil || !fi.IsDir() {
			return exit.Refuse(RefuseCWDNotADirectory, "--cwd %s is not a directory metaharness can enter; create it or name another", s.Cwd)
		}
	}
	// Every check of the spec has held: only now may a kind whose run loop
	// is not built refuse.
	if r.runner == nil {
		return exit.Refuse(exit.RefuseNotBuilt, "run %s is not built yet: it waits for the %s adapter's run loop (launcher/%s); nothing was started", s.Kind, s.Kind, s.Kind)
	}
	return stopped(ctx, "while its inputs were checked")
}

// checkControls refuses, once the stream is open, what the decision mode
// needs and the kind does not honour: the controls' refusals are command
// results, so they come after the stream opens.
func (r *run) checkControls() error {
	s := r.spec
	if err := frame.CheckControls(r.out.events, s.Kind, s.Decisions, r.in.frame != nil, r.d.Capabilities.Tiers.Call != kind.Absent, r.refusedWith); err != nil {
		return err
	}
	if r.d.Capabilities.Mode(s.Decisions) != kind.Delivered {
		return exit.Refuse(RefuseDecisionsUnverified, "--decisions %s is %s on %s: this build has not driven it, so it refuses rather than over-claim; see `metaharness capabilities %s`",
			s.Decisions, r.d.Capabilities.Mode(s.Decisions), s.Kind, s.Kind)
	}
	return nil
}

// checkOutputPaths refuses, before anything starts, the places the run
// writes only at its end: a session must not run to completion and then lose
// its attestation or transcript to a path that was never usable.
func checkOutputPaths(s *kind.Spec) error {
	if err := checkSessionOutputs(s); err != nil {
		return err
	}
	if s.AttestationFile != "" {
		if err := checkNewFile(RefuseAttestationFile, recordFile{"--attestation", s.AttestationFile}); err != nil {
			return err
		}
	}
	if d := s.RetainDir; d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return exit.Refuse(RefuseRetainDir, "--retain-dir %s is not an existing directory; create it first", d)
		}
		if _, err := os.Lstat(filepath.Join(d, "transcript.jsonl")); err == nil {
			return exit.Refuse(RefuseRetainDir, "--retain-dir %s already holds a transcript.jsonl; name an empty directory, so that no earlier transcript is overwritten", d)
		}
	}
	return nil
}

// refusedWith is the code the kind refuses command c with, "" when it
// honours it.
func (r *run) refusedWith(c string) string { return r.d.Capabilities.Support(c).RefusedWith }

func (r *run) pairing() attest.Pairing {
	s := r.spec
	return attest.Pairing{Audit: s.AuditOwed(), Auditor: s.Auditor, Spec: s.AuditSpec, Args: s.AuditorArgs, WritableTree: s.Cwd, PATH: r.io.Env["PATH"]}
}
