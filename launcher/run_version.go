package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
	"go.uber.org/zap"
)

// checkVersion holds the vendor binary to the pin. A version cached under
// the binary's identity (hostcache.go) is believed without running it.
// Otherwise --strict-version runs --version before going on, since the spawn
// waits on its verdict; without it the probe runs alongside the rest of the
// launch and the spawn, and its warning, if any, is put before the next line
// written (record.Writer.Precede), where it would stand had the run waited.
func (r *run) checkVersion(ctx context.Context, binary, childPath string) error {
	r.version = make(chan string, 1)
	cache := openCache(r.io.Env, "versions")
	id, idErr := identify(binary)
	if idErr == nil {
		if v, ok := cache.lookup(id); ok {
			r.version <- v
			return r.holdToPin(binary, v, nil)
		}
	}
	// A HOME of its own: the probe may run beside the child, which must
	// not find what the probe leaves in the child's HOME.
	home := filepath.Join(r.tree.root, "version-probe")
	if err := os.Mkdir(home, 0o700); err != nil {
		return exit.Wrap(kind.RefuseScratchWrite, err, "creating %s", home)
	}
	env := []string{"PATH=" + childPath, "HOME=" + home}
	probe := func() (string, error) {
		v, err := versionOf(ctx, binary, env)
		// Cached only when the binary is as it was before the probe, so
		// that a binary replaced meanwhile is not filed under its old
		// identity.
		if now, nowErr := identify(binary); err == nil && idErr == nil && nowErr == nil && now == id {
			if err := cache.store(id, v); err != nil {
				r.io.Log.Debug("the --version cache was not written", zap.Error(err))
			}
		}
		r.version <- v
		return v, err
	}
	if r.spec.StrictVersion {
		v, err := probe()
		r.happened = append(r.happened, "the vendor binary was run with --version")
		if err := stopped(ctx, "while "+binary+" --version ran"); err != nil {
			return err
		}
		return r.holdToPin(binary, v, err)
	}
	r.happened = append(r.happened, "the vendor binary's --version was started")
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := probe()
		done <- result{v, err}
	}()
	r.out.events.Precede(func() record.Event {
		res := <-done
		if ctx.Err() != nil {
			return nil // stopped: the version was not read, and the stream says why
		}
		return offPin(r.d.Capabilities.VersionsPinned, binary, res.v, res.err)
	})
	return nil
}

// holdToPin writes the warning for a version off the pin, or refuses it
// under --strict-version.
func (r *run) holdToPin(binary, v string, err error) error {
	warn := offPin(r.d.Capabilities.VersionsPinned, binary, v, err)
	switch {
	case warn == nil:
		return nil
	case r.spec.StrictVersion && err != nil:
		return exit.Wrap(RefuseVersionUnknown, err, "--strict-version: the version of %s could not be read, so it cannot be held to the pin (%s)", binary, strings.Join(r.d.Capabilities.VersionsPinned, ", "))
	case r.spec.StrictVersion:
		return exit.Refuse(RefuseVersionOffPin, "--strict-version: %s is %s, off the pin (%s); install the pinned version or drop --strict-version", binary, v, strings.Join(r.d.Capabilities.VersionsPinned, ", "))
	}
	return r.out.events.Emit(warn)
}

// offPin is the VERSION_OFF_PIN warning for a version (or the error that
// kept it from being read), nil for a pinned one.
func offPin(pins []string, binary, v string, err error) record.Event {
	if err == nil && slices.Contains(pins, v) {
		return nil
	}
	msg := fmt.Sprintf("%s is %s, off the pin (%s); the run goes on, and --strict-version would refuse it", binary, v, strings.Join(pins, ", "))
	if err != nil {
		msg = fmt.Sprintf("the version of %s could not be read (%v); the pin is %s", binary, err, strings.Join(pins, ", "))
	}
	return &record.Warning{Code: "VERSION_OFF_PIN", Message: msg}
}

// vendorVersion is what the vendor's --version said ("" when it could not
// be read), waiting for a probe still running beside the spawn.
func (r *run) vendorVersion() string {
	if r.version == nil {
		return ""
	}
	v := <-r.version
	r.version <- v
	return v
}
