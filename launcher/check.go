package launcher

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/loopbackhost"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/mcpserve"
)

// checkSpec refuses, before anything is started, every flag the kind cannot
// honour and every combination that cannot mean what it says. The first
// problem found is reported. It is pure: it reads only the spec and the
// kind's descriptor.
func checkSpec(s *kind.Spec, d *kind.Descriptor) error {
	rules := d.Rules
	if !rules.PromptOptional && strings.TrimSpace(s.Prompt) == "" {
		return exit.Refuse(RefuseNoPrompt, "run %s needs a task: pass -p TEXT or put the task after -- as the last argument", s.Kind)
	}
	if f := s.KindFlags; f != nil && f.Kind() != s.Kind {
		if err := f.RefuseOn(s.Kind); err != nil {
			return err
		}
	}
	for _, p := range s.Hide {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
			return exit.Refuse(RefuseHideNotAbsolute, "--hide %q: a path to hide must be absolute and below /; name it in full", p)
		}
	}
	if len(s.AddDirs) > 0 {
		return exit.Refuse(RefuseAddDirDenied, "--add-dir %s: the child is never granted a directory beyond its own cwd; put what it needs under --cwd, or hand files over with --context", s.AddDirs[0])
	}
	if s.ScratchCwd && s.Cwd == "" {
		return exit.Refuse(RefuseScratchCWDNeedsCWD, "--scratch-cwd declares the --cwd directory the embedder's disposable copy, and no --cwd was given; add --cwd DIR or drop --scratch-cwd")
	}
	if len(s.PluginDirs) > 0 {
		return exit.Refuse(exit.RefuseNotBuilt, "--plugin-dir %s is not built yet: plugin copies into the scratch home wait for the plugin digest and the H1a declaration; run without it", s.PluginDirs[0])
	}
	if s.ToolSurface == kind.SurfaceOwned && rules.NoOwnedSurface != "" {
		return exit.Refuse(kind.RefuseToolSurfaceUnsupported, "--tool-surface owned on %s: %s; drop the flag", s.Kind, rules.NoOwnedSurface)
	}
	if s.Catalogue != "" && s.ToolSurface == kind.SurfaceNative {
		return exit.Refuse(mcpserve.RefuseNeedsOwnedSurface, "--catalogue %s beside --tool-surface native: a catalogue replaces the vendor's tools, which the native surface keeps; drop --tool-surface native", s.Catalogue)
	}
	if rules.OwnedPrograms && len(s.AllowProgs) > 0 {
		if s.ToolSurface == kind.SurfaceNative {
			return exit.Refuse(RefuseAllowProgramNeedsOwnedSurface, "--allow-program %s beside --tool-surface native: the owned surface's run entry starts the programs, and the native surface keeps the vendor's own tools instead; drop --tool-surface native", s.AllowProgs[0])
		}
		if err := mcpserve.CheckPrograms(s.AllowProgs, true); err != nil {
			return err
		}
	}
	if d.Capabilities.Mode(s.Decisions) == kind.Absent {
		return exit.Refuse(RefuseDecisionsUnsupported, "--decisions %s on %s: %s", s.Decisions, s.Kind, rules.NoDecisions)
	}
	if err := checkCredentials(s, rules); err != nil {
		return err
	}
	if s.Unconfined && !d.Confined {
		return exit.Refuse(RefuseUnconfinedNotApplicable, "--unconfined on %s: metaharness does not confine the %s child (its own confinement is the kind's), so there is nothing to leave out; drop --unconfined", s.Kind, s.Kind)
	}
	eventsKept := s.Events != "" || s.ArtifactsDir != "" || s.RecordsDir != ""
	switch {
	case s.Output == kind.OutputFinal && !eventsKept:
		return exit.Refuse(RefuseOutputFinalNeedsEvents, "--output final prints only the final answer on stdout, so the event stream needs a home: add --records-dir DIR or --events FILE (or run where the fleet names $%s)", EnvArtifactsDir)
	case s.Output == kind.OutputStatus && !eventsKept:
		return exit.Refuse(RefuseOutputStatusNeedsRecords, "--output status prints one line naming the outcome, and the answer and the event stream need a home: add --records-dir DIR (or --events FILE, or run where the fleet names $%s)", EnvArtifactsDir)
	}
	if b := s.ThrottleBudget; b != nil && *b < 0 {
		return exit.Refuse(RefuseThrottleBudget, "--throttle-budget %v is negative; give how long one model request may wait out the upstream's throttles (0 waits none, the default is %v)", *b, kind.DefaultThrottleBudget)
	}
	return nil
}

func checkCredentials(s *kind.Spec, rules kind.Rules) error {
	viaProxy := s.Credentials == kind.CredentialsLoopback
	if why, ok := rules.Credentials[s.Credentials]; ok {
		return exit.Refuse(RefuseCredentialsUnsupported, "--credentials %s %s", s.Credentials, why)
	}
	sources := loopback.TokenSource{Env: s.TokenEnv, File: s.TokenFile, FD: s.TokenFD}.Given()
	switch {
	case len(sources) > 1:
		return exit.Refuse(RefuseTokenSourceConflict, "%s: more than one source of the real token; keep one (--token-fd is the safest: nothing of it stays on disk or in an environment)", strings.Join(sources, " and "))
	case !viaProxy && len(sources) > 0:
		return exit.Refuse(RefuseTokenSourceWithoutLoopback, "%s names the token the loopback proxy attaches, and --credentials is %s; use --credentials loopback or drop it", sources[0], s.Credentials)
	case !viaProxy && len(s.AllowEgress) > 0:
		return exit.Refuse(RefuseAllowEgressNeedsLoopback, "--allow-egress %s opens the loopback proxy's egress gate, and --credentials is %s; use --credentials loopback or drop it", s.AllowEgress[0], s.Credentials)
	}
	if s.ModelEndpoint != "" {
		if err := checkDialURL("--model-endpoint", s.ModelEndpoint); err != nil {
			return err
		}
	}
	return nil
}

// checkDialURL refuses a URL metaharness or its child would dial unless it
// is https, or http to a genuine loopback host (127.0.0.0/8, ::1,
// localhost). Private-network addresses are not loopback.
func checkDialURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return exit.Refuse(RefuseURLInvalid, "%s %q is not an http(s) URL with a host; give a root URL such as https://api.anthropic.com", flag, raw)
	}
	if u.Scheme == "http" && !loopbackhost.Is(u.Hostname()) {
		return exit.Refuse(RefuseURLNotHTTPS, "%s %s: plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost), and %s is not one; use https", flag, raw, u.Hostname())
	}
	return nil
}
