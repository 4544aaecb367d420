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

	"github.com/metaharness/metaharness/exit"
)

// FlagProber is a kind whose launch flags can be put to the vendor binary
// without a model, a network or a credential, from the environment a launch
// for callerHome would construct, inside scratch (an empty directory doctor
// removes). It returns the flags it put and one fault per flag (or probe)
// the binary did not take.
type FlagProber interface {
	ProbeFlags(ctx context.Context, binary, callerHome, scratch string) (checked, faults []string, err error)
}

// Doctor answers, before any run, whether a launch of k would be clean: the
// binary on the child's PATH, its version against the pin, the launch's
// flags (when the kind can probe them) and a loopback bind. It prints one
// line per fact. Exit 0: all clean; 1: answered, but a launch now would not
// be clean; 2: the binary is missing or gives no version.
func Doctor(ctx context.Context, k Kind, callerHome string, out io.Writer) (exit.Code, error) {
	d := k.Descriptor()
	caps := d.Capabilities
	kind, pins := d.Name, strings.Join(caps.VersionsPinned, ", ")
	childPath := ChildPath(callerHome)
	binary, err := LookPath(d.Binary, childPath)
	if err != nil {
		return exit.Refused, exit.Refuse(RefuseVendorNotFound, "%s; install the pinned version (%s) there, for example into ~/.local/bin", err, pins)
	}
	scratch, err := os.MkdirTemp("", "mh-doctor-")
	if err != nil {
		return exit.Refused, exit.Wrap(RefuseScratchUnavailable, err, "doctor needs a scratch HOME for the vendor under %s; set TMPDIR to a writable directory", os.TempDir())
	}
	defer os.RemoveAll(scratch)
	home := filepath.Join(scratch, "version-home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return exit.Refused, exit.Wrap(RefuseScratchUnavailable, err, "doctor needs a scratch HOME for the vendor in %s", scratch)
	}
	version, err := VersionOf(ctx, binary, []string{"PATH=" + childPath, "HOME=" + home})
	if err != nil {
		return exit.Refused, exit.Wrap(RefuseVersionUnknown, err, "the version of %s could not be read, so it cannot be held to the pin (%s)", binary, pins)
	}
	faults := 0
	var b strings.Builder
	if slices.Contains(caps.VersionsPinned, version) {
		fmt.Fprintf(&b, "%s: %s %s — on the adapter's pin (%s)\n", kind, binary, version, pins)
	} else {
		faults++
		fmt.Fprintf(&b, "%s: %s %s — OFF the adapter's pin (%s); a run goes on with a VERSION_OFF_PIN warning, and --strict-version would refuse it\n", kind, binary, version, pins)
	}
	if p, ok := k.(FlagProber); ok {
		probe := filepath.Join(scratch, "probe")
		if err := os.Mkdir(probe, 0o700); err != nil {
			return exit.Refused, exit.Wrap(RefuseScratchUnavailable, err, "doctor needs a scratch directory for the flag probe in %s", scratch)
		}
		checked, bad, err := p.ProbeFlags(ctx, binary, callerHome, probe)
		switch {
		case err != nil:
			faults++
			fmt.Fprintf(&b, "flags: FAULT: the probe could not run: %v\n", err)
		case len(bad) == 0:
			fmt.Fprintf(&b, "flags: %s takes every flag the launch uses (%s)\n", binary, strings.Join(checked, " "))
		default:
			for _, f := range bad {
				faults++
				fmt.Fprintf(&b, "flags: FAULT: %s\n", f)
			}
		}
	} else {
		fmt.Fprintf(&b, "flags: not checked: `run %s` is not built, so there is no launch whose flags to put to %s\n", kind, binary)
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err != nil {
		faults++
		fmt.Fprintf(&b, "loopback: FAULT: cannot bind 127.0.0.1 for the loopback proxy: %v\n", err)
	} else {
		fmt.Fprintf(&b, "loopback: the proxy can bind %s\n", ln.Addr())
		_ = ln.Close()
	}
	code := exit.OK
	if faults > 0 {
		code = exit.Gap
		fmt.Fprintf(&b, "doctor: %d fault(s): a launch now would not be clean (exit 1)\n", faults)
	} else {
		fmt.Fprintf(&b, "doctor: a launch of %s now would be clean (exit 0)\n", kind)
	}
	_, err = io.WriteString(out, b.String())
	return code, err
}
