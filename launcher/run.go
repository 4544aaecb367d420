package launcher

import (
	"context"
	"errors"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
)

// IO is what a run touches outside its spec.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Env is the caller's environment.
	Env map[string]string
	// ForgetEnv removes a variable holding a secret from the process's own
	// environment once the run has read it (confine.ForgetEnv); nil leaves
	// the environment alone.
	ForgetEnv func(name string) error
	// Self is the metaharness executable, which the child starts as its
	// hook program and catalogue server.
	Self string
	// Version is metaharness's own, for the records that name the build.
	Version string
	Log     *zap.Logger
}

// Run is one governed session, in the order SPEC §5 gives: checks that
// refuse before anything starts, then the scratch tree, the proxy, the
// plan, the scratch files, the spawn; then the pump of events, decisions and
// commands; then the wind-up, the attestation and the exit code. ctx ending
// (SIGTERM, SIGINT, SIGHUP), or stdout's reader going away, is a stop
// wherever it lands: before the spawn the run refuses "stopped", after it
// the child's whole process group is ended; either way the stream is
// closed and the scratch tree removed.
func Run(ctx context.Context, spec *kind.Spec, k kind.Kind, rio IO) (exit.Code, error) {
	if rio.Log == nil {
		rio.Log = zap.NewNop()
	}
	d := k.Descriptor()
	r := &run{spec: spec, kind: k, d: d, io: rio}
	r.runner, _ = k.(kind.Runner)
	r.checker, _ = k.(kind.SpecChecker)
	ctx, r.stop = context.WithCancelCause(ctx)
	defer r.stop(nil)
	defer r.cleanup()
	r.out.runID = newRunID(spec.Kind)
	code, err := r.start(ctx)
	if lim := hostLimit(err); lim != nil && code == exit.Refused {
		err, r.limited = lim, true
	}
	r.endStream(context.Cause(ctx) != nil)
	code, err = r.writeStatement(code, err)
	r.endTelemetry(code, err, context.Cause(ctx) != nil)
	return r.summarize(code, err)
}

// errStdoutClosed stops a run whose stdout reader went away: a closed
// stdout is a stop, like SIGTERM, and the run still finishes its --events
// file, its attestation and its wind-up.
var errStdoutClosed = errors.New("stdout was closed by its reader")

type run struct {
	spec    *kind.Spec
	kind    kind.Kind
	d       *kind.Descriptor
	runner  kind.Runner      // nil: the kind's run loop is not built
	checker kind.SpecChecker // nil: the kind has no refusals of its own
	io      IO

	in      inputs          // what the checks read (run_checks.go)
	tree    tree            // the scratch tree (run_setup.go)
	out     stream          // the event stream (run_stream.go)
	proxy   *loopback.Proxy // under --credentials loopback (run_setup.go)
	vendor  *vendorPeer     // the vendor's process, for the proxy's Admit (run_admit.go)
	gitSeal *gitSeal        // what the operator's git runs in --cwd, as it was (gitseal.go)
	// custodyLock is the registry of live runs' lock, held from observe
	// until this run's entry is written (custody.go).
	custodyLock *os.File
	version     chan string             // the vendor's --version, once read (run_version.go)
	channel     channelLog              // the decision channel's refusals (run_channel.go)
	happened    []string                // what had started, for catalogue-copy-differs
	stop        context.CancelCauseFunc // ends the run's context (errStdoutClosed)
	ended       *ended                  // set once the session has been concluded (run_windup.go)

	statement *statement // under --statement (run_statement.go)
	tel       trace      // the run's OpenTelemetry trace (run_telemetry.go)
	// halted names the embedder's command that ended the session, halt or
	// interrupt; "" when none did (run_windup.go).
	halted string
	// limited: the run refused at a limit of the host's (hostlimit.go).
	limited bool
}

// start runs the phases in SPEC §5's order, each in a file of its own:
// check (run_checks.go; nothing is started), the stream (run_stream.go),
// setUp, observe and write (run_setup.go), then the session and the
// wind-up (run_session.go, run_windup.go). A phase's error is a refusal,
// exit 2, where the run stands.
func (r *run) start(ctx context.Context) (exit.Code, error) {
	if err := checkRecordPlaces(r.spec); err != nil {
		return exit.Refused, err
	}
	if err := r.makeRunRecords(); err != nil {
		return exit.Refused, err
	}
	if err := r.check(ctx); err != nil {
		return exit.Refused, err
	}
	if err := r.openEvents(); err != nil {
		return exit.Refused, err
	}
	if err := r.checkControls(); err != nil {
		return exit.Refused, err
	}
	w, err := r.setUp(ctx)
	if err != nil {
		return exit.Refused, err
	}
	if err := r.observe(ctx, w); err != nil {
		return exit.Refused, err
	}
	plan, err := r.write(ctx, w)
	if err != nil {
		return exit.Refused, err
	}
	return r.session(ctx, plan)
}

func (r *run) cleanup() {
	r.releaseCustody()
	if r.proxy != nil {
		_ = r.proxy.Close()
	}
	for _, f := range r.out.files {
		_ = f.Close()
	}
	if r.tree.scratch != nil {
		if err := r.tree.scratch.remove(); err != nil {
			r.io.Log.Warn("removing the scratch tree", zap.String("path", r.tree.root), zap.Error(err))
		}
	}
}
