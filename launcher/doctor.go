package launcher

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
)

// Doctor answers, before any run, whether a launch of k would be clean: the
// binary on the child's PATH, its version against the pin, whether the
// kind's run is built and the launch's flags (when the kind can probe
// them), the kind's own checks of the caller's environment (EnvChecker), a
// loopback bind, whether the child can be confined here (self is this
// binary, whose init the probe starts); getenv reads the caller's
// environment. It prints one Check
// per line. Exit 0: no check
// failed; 1: one did (a launch now would not be clean, or would be
// refused); 2: doctor itself could not work (no scratch directory).
func Doctor(ctx context.Context, k kind.Kind, getenv func(string) string, self string, out io.Writer) (exit.Code, error) {
	checks, err := doctorChecks(ctx, k, getenv, self)
	if err != nil {
		return exit.Refused, err
	}
	code := exit.OK
	var b strings.Builder
	for _, c := range checks {
		if c.Verdict == kind.Fail {
			code = exit.Gap
		}
		b.WriteString(c.String() + "\n")
	}
	_, err = io.WriteString(out, b.String())
	return code, err
}

func doctorChecks(ctx context.Context, k kind.Kind, getenv func(string) string, self string) ([]kind.Check, error) {
	callerHome := getenv("HOME")
	d := k.Descriptor()
	pins := strings.Join(d.Capabilities.VersionsPinned, ", ")
	var checks []kind.Check
	add := func(s kind.Verdict, name, format string, args ...any) {
		checks = append(checks, kind.Check{Verdict: s, Name: name, Reason: fmt.Sprintf(format, args...)})
	}
	childPath := kind.ChildPath(callerHome)
	binary, err := lookPath(d.Binary, childPath)
	if err != nil {
		add(kind.Fail, "binary", "%s", vendorMissing(d, err))
	} else {
		add(kind.OK, "binary", "%s, found on the child's PATH %s", binary, childPath)
	}
	_, runner := k.(kind.Runner)
	if !runner {
		add(kind.Fail, "run", "run %s is not built yet, so a launch now is refused (not-built) and there is no launch whose flags to put to %s", d.Name, d.Binary)
	}
	if binary != "" {
		more, err := binaryChecks(ctx, k, binary, childPath, callerHome, pins, runner)
		if err != nil {
			return nil, err
		}
		checks = append(checks, more...)
	}
	if ec, ok := k.(kind.EnvChecker); ok {
		checks = append(checks, ec.EnvChecks(ctx, getenv)...)
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err != nil {
		add(kind.Fail, "loopback", "cannot bind 127.0.0.1 for the loopback proxy: %v", err)
	} else {
		add(kind.OK, "loopback", "the proxy can bind %s", ln.Addr())
		_ = ln.Close()
	}
	return append(checks, scratchCheck(getenv), confinementCheck(d, self)), nil
}

// scratchCheck says where the runs' scratch trees go, and reclaims the
// trees dead runs left there, as a run does before making its own.
func scratchCheck(getenv func(string) string) kind.Check {
	dir, err := runtimeDir(map[string]string{envRuntimeDir: getenv(envRuntimeDir)})
	if err != nil {
		return kind.Check{Verdict: kind.Fail, Name: "scratch", Reason: exit.Line(err)}
	}
	words := "scratch trees go in " + dir + ", which every confined child's view hides but for its own tree"
	if dead := reclaimScratch(dir); len(dead) > 0 {
		words += fmt.Sprintf("; reclaimed %d left by dead runs", len(dead))
	}
	return kind.Check{Verdict: kind.OK, Name: "scratch", Reason: words}
}

// confinementCheck tries the confinement a run of d would make, or says
// that d's child is not confined by metaharness.
func confinementCheck(d *kind.Descriptor, self string) kind.Check {
	if !d.Confined {
		return kind.Check{Verdict: kind.Warn, Name: "confinement", Reason: fmt.Sprintf("not checked: metaharness does not confine the %s child (its own confinement is the kind's)", d.Name)}
	}
	c, err := confine.Probe(self)
	if err != nil {
		return kind.Check{Verdict: kind.Fail, Name: "confinement", Reason: fmt.Sprintf("unavailable here: %v; a run would go on unconfined and attest H4, H6 and H12 as gaps, so --hermetic strict would fail", err)}
	}
	return kind.Check{Verdict: kind.OK, Name: "confinement", Reason: "the child can be confined here: user, PID, mount and network namespaces, metaharness's own init, a fresh /proc and /dev, a listener inside the network namespace and a nested user namespace were all made; " + controlWords(c)}
}

// controlWords says which of the controls beyond the namespaces hold here.
func controlWords(c confine.Controls) string {
	held := func(ok bool, yes, why string) string {
		if ok {
			return yes
		}
		return "no (" + why + ")"
	}
	return "seccomp filter on the child's tree: " + held(c.Seccomp, "yes", c.SeccompWhy) +
		"; command sandbox (Landlock scopes): " + held(c.Scoped(), fmt.Sprintf("yes (ABI %d)", c.LandlockABI), c.LandlockWhy) +
		"; cgroup bounds: " + held(c.Cgroup != "", "yes, below "+c.Cgroup, c.CgroupWhy)
}

// binaryChecks asks the binary found: its version against the pin, and, for
// a built run whose kind can probe them, the launch's flags.
func binaryChecks(ctx context.Context, k kind.Kind, binary, childPath, callerHome, pins string, runner bool) ([]kind.Check, error) {
	var checks []kind.Check
	scratch, err := os.MkdirTemp("", "mh-doctor-")
	if err != nil {
		return nil, exit.Wrap(RefuseScratchUnavailable, err, "doctor needs a scratch HOME for the vendor under %s; set TMPDIR to a writable directory", os.TempDir())
	}
	defer os.RemoveAll(scratch)
	home := filepath.Join(scratch, "version-home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, exit.Wrap(RefuseScratchUnavailable, err, "doctor needs a scratch HOME for the vendor in %s", scratch)
	}
	version, err := versionOf(ctx, binary, []string{"PATH=" + childPath, "HOME=" + home})
	switch {
	case err != nil:
		checks = append(checks, kind.Check{Verdict: kind.Fail, Name: "version", Reason: fmt.Sprintf("the version of %s could not be read (%v), so it cannot be held to the pin (%s)", binary, err, pins)})
	case slices.Contains(k.Descriptor().Capabilities.VersionsPinned, version):
		checks = append(checks, kind.Check{Verdict: kind.OK, Name: "version", Reason: fmt.Sprintf("%s, on the adapter's pin (%s)", version, pins)})
	default:
		checks = append(checks, kind.Check{Verdict: kind.Fail, Name: "version", Reason: fmt.Sprintf("%s is OFF the adapter's pin (%s); a run goes on with a VERSION_OFF_PIN warning, and --strict-version would refuse it", version, pins)})
	}
	if !runner {
		return checks, nil
	}
	p, ok := k.(kind.FlagProber)
	if !ok {
		return append(checks, kind.Check{Verdict: kind.Warn, Name: "flags", Reason: fmt.Sprintf("not checked: %s has no way to put the launch's flags to %s without a session", k.Descriptor().Name, binary)}), nil
	}
	probe := filepath.Join(scratch, "probe")
	if err := os.Mkdir(probe, 0o700); err != nil {
		return nil, exit.Wrap(RefuseScratchUnavailable, err, "doctor needs a scratch directory for the flag probe in %s", scratch)
	}
	checked, bad, err := p.ProbeFlags(ctx, binary, callerHome, probe)
	switch {
	case err != nil:
		checks = append(checks, kind.Check{Verdict: kind.Fail, Name: "flags", Reason: fmt.Sprintf("the probe could not run: %v", err)})
	case len(bad) == 0:
		checks = append(checks, kind.Check{Verdict: kind.OK, Name: "flags", Reason: fmt.Sprintf("%s takes every flag the launch uses (%s)", binary, strings.Join(checked, " "))})
	default:
		for _, f := range bad {
			checks = append(checks, kind.Check{Verdict: kind.Fail, Name: "flags", Reason: f})
		}
	}
	return checks, nil
}

// vendorMissing says that the kind's binary is not on the child's PATH
// and how to put it there.
func vendorMissing(d *kind.Descriptor, err error) string {
	return fmt.Sprintf("%v; %s", err, d.Install)
}

// vendorNotFound is the run's refusal when the kind's binary is not on the
// child's PATH, with the same fix doctor prints.
func vendorNotFound(d *kind.Descriptor, err error) error {
	return exit.Refuse(RefuseVendorNotFound, "%s", vendorMissing(d, err))
}
