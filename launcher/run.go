package launcher

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher/contextfile"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
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
	Log  *zap.Logger
}

// Run is one governed session, in the order SPEC §5 gives: checks that
// refuse before anything starts, then the scratch tree, the proxy, the
// plan, the scratch files, the spawn; then the pump of events, decisions and
// commands; then the wind-up, the attestation and the exit code. ctx ending
// (SIGTERM, SIGINT, SIGHUP), or stdout's reader going away, is a stop
// wherever it lands: before the spawn the run refuses "stopped", after it
// the child's whole process group is ended; either way the stream is
// closed and the scratch tree removed.
func Run(ctx context.Context, spec *Spec, k Kind, rio IO) (exit.Code, error) {
	if rio.Log == nil {
		rio.Log = zap.NewNop()
	}
	d := k.Descriptor()
	r := &run{spec: spec, kind: k, d: d, io: rio, caps: d.Capabilities}
	r.runner, _ = k.(Runner)
	r.checker, _ = k.(SpecChecker)
	ctx, r.stop = context.WithCancelCause(ctx)
	defer r.stop(nil)
	defer r.cleanup()
	code, err := r.start(ctx)
	r.endStream(context.Cause(ctx) != nil)
	return r.summarize(code, err)
}

// errStdoutClosed stops a run whose stdout reader went away: a closed
// stdout is a stop, like SIGTERM, and the run still finishes its --events
// file, its attestation and its wind-up.
var errStdoutClosed = errors.New("stdout was closed by its reader")

// endStream closes a stream that a refusal or a stop cut short. Once a
// line was written, or the run was stopped, every path ends with
// stream.closed, so the record stays complete; a refusal before any line
// leaves no stream and no --events file at all; a warning still owed by
// a probe run beside the launch counts as a line.
func (r *run) endStream(wasStopped bool) {
	if r.events == nil || r.events.Closed() {
		return
	}
	r.events.Settle()
	if r.events.Lines() > 0 || wasStopped {
		_ = r.events.Close(record.ReasonError, nil)
		return
	}
	for _, f := range r.spec.eventFiles() {
		_ = os.Remove(f.path)
	}
}

type run struct {
	spec    *Spec
	kind    Kind
	d       *Descriptor
	runner  Runner      // nil: the kind's run loop is not built
	checker SpecChecker // nil: the kind has no refusals of its own
	io      IO
	caps    *Capabilities

	auditor  *attest.Auditor
	frame    *frame.Frame
	contract *mcpserve.Contract
	context  []contextfile.File
	scratch  string
	cwd      string // the child's working directory
	writes   bool   // the catalogue declares a write entry
	socket   string // the decision channel
	proxy    *loopback.Proxy
	events   *record.Writer
	runID    string                  // the stream's, once it is open
	ended    *ended                  // set once the session has been concluded
	stop     context.CancelCauseFunc // ends the run's context (errStdoutClosed)
	tap      *attest.Tap
	files    []io.Closer
	happened []string    // what had started, for catalogue-copy-differs
	version  chan string // the vendor's --version, once read (vendorVersion)
}

func (r *run) cleanup() {
	if r.proxy != nil {
		_ = r.proxy.Close()
	}
	for _, f := range r.files {
		_ = f.Close()
	}
	if r.scratch != "" {
		if err := os.RemoveAll(r.scratch); err != nil {
			r.io.Log.Warn("removing the scratch tree", zap.String("path", r.scratch), zap.Error(err))
		}
	}
}

func (r *run) start(ctx context.Context) (exit.Code, error) {
	s := r.spec
	var err error
	// Pairing and applicability: refusals, nothing started.
	if r.auditor, err = attest.CheckPairing(r.pairing()); err != nil {
		return exit.Refused, err
	}
	if err := CheckSpec(s, r.d); err != nil {
		return exit.Refused, err
	}
	if r.checker != nil {
		if err := r.checker.CheckSpec(s); err != nil {
			return exit.Refused, err
		}
	}
	mode := s.Decisions
	if s.Frame != "" {
		if r.frame, err = frame.LoadForRun(s.Frame); err != nil {
			return exit.Refused, err
		}
	}
	if err := frame.CheckMode(mode, r.frame); err != nil {
		return exit.Refused, err
	}
	if err := checkOutputPaths(s); err != nil {
		return exit.Refused, err
	}
	if s.Catalogue != "" {
		if r.contract, err = mcpserve.LoadContract(s.Catalogue); err != nil {
			return exit.Refused, err
		}
		if err := r.contract.CheckFor(r.d.Catalogue, "owned", s.AllowProgs); err != nil {
			return exit.Refused, err
		}
	}
	if len(s.Context) > 0 {
		if r.context, err = contextfile.Load(s.Cwd, s.Context); err != nil {
			return exit.Refused, err
		}
	}
	if s.Cwd != "" {
		if fi, err := os.Stat(s.Cwd); err != nil || !fi.IsDir() {
			return exit.Refused, exit.Refuse(RefuseCWDNotADirectory, "--cwd %s is not a directory metaharness can enter; create it or name another", s.Cwd)
		}
	}
	// Every check of the spec has held: only now may a kind whose run loop
	// is not built refuse. The stream opens after it, for the controls the
	// mode needs are refused as command results.
	if r.runner == nil {
		return exit.Refused, exit.Refuse(exit.RefuseNotBuilt, "run %s is not built yet: it waits for the %s adapter's run loop (launcher/%s); nothing was started", s.Kind, s.Kind, s.Kind)
	}
	if err := stopped(ctx, "while its inputs were checked"); err != nil {
		return exit.Refused, err
	}
	if err := r.openEvents(); err != nil {
		return exit.Refused, err
	}
	refuses := func(c string) string { return r.caps.Support(c).RefusedWith }
	if err := frame.CheckControls(r.events, s.Kind, mode, r.frame != nil, r.caps.Tiers.Call != Absent, refuses); err != nil {
		return exit.Refused, err
	}
	if r.caps.Mode(s.Decisions) != Delivered {
		return exit.Refused, exit.Refuse(RefuseDecisionsUnverified, "--decisions %s is %s on %s: this build has not driven it, so it refuses rather than over-claim; see `metaharness capabilities %s`",
			s.Decisions, r.caps.Mode(s.Decisions), s.Kind, s.Kind)
	}
	return r.launch(ctx, mode)
}

// checkOutputPaths refuses, before anything starts, the places the run
// writes only at its end: a session must not run to completion and then lose
// its attestation or transcript to a path that was never usable.
func checkOutputPaths(s *Spec) error {
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

func (r *run) pairing() attest.Pairing {
	s := r.spec
	return attest.Pairing{Audit: s.AuditOwed(), Auditor: s.Auditor, Spec: s.AuditSpec, Args: s.AuditorArgs, WritableTree: s.Cwd, PATH: r.io.Env["PATH"]}
}

// openEvents creates the event stream: stdout unless --output final, plus
// --events FILE and the fleet's artifacts directory, plus the tap the floor
// reads.
func (r *run) openEvents() error {
	r.tap = &attest.Tap{}
	sinks := []record.Sink{{Name: "the attestation's copy", W: r.tap}}
	if r.spec.Output != OutputFinal {
		sinks = append(sinks, record.Sink{Name: sinkStdout, W: r.io.Stdout})
	}
	for _, ef := range r.spec.eventFiles() {
		f, err := os.OpenFile(ef.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return exit.Wrap(RefuseEventsFile, err, "%s %s cannot be created (it must not exist yet, so that no earlier record is overwritten)", ef.from, ef.path)
		}
		r.files = append(r.files, f)
		sinks = append(sinks, record.Sink{Name: ef.from + " " + ef.path, W: f})
	}
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	r.runID = r.spec.Kind + "-" + hex.EncodeToString(id)
	r.events = record.NewStream(r.runID, r.sinkFailed, sinks...)
	return nil
}

// sinkStdout names stdout among the stream's sinks.
const sinkStdout = "stdout"

// sinkFailed is told, once, of each sink that stops taking the stream; the
// others go on with it. A stdout whose reader went away stops the run. The
// run ends with exit 2 either way, the attestation naming the sink
// (stream_failures).
func (r *run) sinkFailed(f record.SinkFailure) {
	if f.Sink == sinkStdout {
		fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseStdoutClosed,
			"stdout stopped taking the event stream at line %d (%s); metaharness stops the child, finishes --events and --attestation, removes the scratch tree and exits 2", f.Line, f.Error)))
		r.stop(errStdoutClosed)
		return
	}
	fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseEventsFile,
		"%s stopped taking the event stream at line %d (%s); the stream goes on without it, and the run will exit 2", f.Sink, f.Line, f.Error)))
}

// launch makes the scratch tree and the sidecars, plans, writes and spawns.
func (r *run) launch(ctx context.Context, mode frame.Mode) (exit.Code, error) {
	s := r.spec
	var err error
	if r.scratch, err = os.MkdirTemp("", "mh-"); err != nil {
		return exit.Refused, exit.Wrap(RefuseScratchUnavailable, err, "the scratch tree cannot be created under %s; set TMPDIR to a writable directory", os.TempDir())
	}
	// Every kind's child gets a scratch HOME, TMPDIR and (without --cwd)
	// working directory; the plan names any directory of its own.
	for _, d := range []string{"home", "tmp", "work"} {
		if err := os.Mkdir(filepath.Join(r.scratch, d), 0o700); err != nil {
			return exit.Refused, err
		}
	}
	r.socket = filepath.Join(r.scratch, "decisions.sock")
	w := &World{Env: r.io.Env, Scratch: r.scratch, Self: r.io.Self, DecisionSocket: r.socket, UID: os.Geteuid(), GID: os.Getegid(), NonDumpable: !confine.Dumpable()}
	r.happened = append(r.happened, "the scratch tree was created")
	if r.d.Confined && !s.Unconfined {
		if w.Controls, err = confinable(r.io.Self, r.io.Env, confine.Probe); err != nil {
			w.Unconfinable = err.Error()
			r.emit(nil, &record.Warning{Code: WarnConfinementUnavailable, Message: "the child runs unconfined, and the attestation says so: " + err.Error()})
		}
	}

	if s.Credentials == CredentialsLoopback {
		if err := r.startProxy(w); err != nil {
			return exit.Refused, err
		}
	}
	if err := stopped(ctx, "while the scratch tree and the proxy were set up"); err != nil {
		return exit.Refused, err
	}
	childPath := ChildPath(r.io.Env["HOME"])
	if w.Binary, err = LookPath(r.d.Binary, childPath); err != nil {
		return exit.Refused, VendorNotFound(r.d, err)
	}
	if err := r.checkVersion(ctx, w.Binary, childPath); err != nil {
		return exit.Refused, err
	}

	r.cwd = filepath.Join(r.scratch, "work")
	if s.Cwd != "" {
		r.cwd = s.Cwd
	}
	walk, err := attest.WalkMemory(r.d.Memory.Shapes, r.cwd)
	if err != nil {
		return exit.Refused, exit.Wrap(RefuseMemoryWalk, err, "the memory-file walk from %s failed", r.cwd)
	}
	w.MemoryAbove, w.MemoryAtRoot = walk.Above, walk.AtRoot
	if len(r.context) > 0 {
		w.Context = contextfile.Render(r.context)
		w.ContextFiles = r.context
	}
	if r.contract != nil {
		w.CatalogueCopy = filepath.Join(r.scratch, "catalogue.json")
		for _, e := range r.contract.Entries {
			w.CatalogueTools = append(w.CatalogueTools, e.Published())
			w.CatalogueDecls = append(w.CatalogueDecls, ToolDecl{Name: e.Published(), Summary: e.Summary, Input: e.InputSchema()})
			op := mcpserve.OperationOf(e.Name)
			w.CatalogueWrites = w.CatalogueWrites || op == "file.write" || op == "file.edit"
		}
		r.writes = w.CatalogueWrites
	}
	if o, ok := r.kind.(Observer); ok {
		if err := o.Observe(ctx, s, w); err != nil {
			return exit.Refused, err
		}
		r.happened = append(r.happened, "the vendor binary was observed")
	}
	plan, err := r.runner.Plan(s, w)
	if err != nil {
		return exit.Refused, err
	}
	if err := contextfile.CheckArgSizes(append([]string{plan.Program}, plan.Args...), r.context); err != nil {
		return exit.Refused, err
	}
	for _, d := range plan.Dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			return exit.Refused, exit.Wrap(RefuseScratchWrite, err, "creating %s", d)
		}
	}
	if err := writeFiles(plan.Files); err != nil {
		return exit.Refused, err
	}
	r.happened = append(r.happened, "the scratch files were written")
	if r.contract != nil {
		if err := mcpserve.WriteScratchCopy(r.contract, w.CatalogueCopy, strings.Join(r.happened, ", ")+"; no vendor session was started"); err != nil {
			return exit.Refused, err
		}
	}
	if err := stopped(ctx, "while the launch was planned and written"); err != nil {
		return exit.Refused, err
	}
	if p, ok := r.kind.(Preflighter); ok {
		if err := p.Preflight(ctx, plan); err != nil {
			return exit.Refused, err
		}
	}
	return r.session(ctx, mode, plan)
}

// stopped is the refusal of a run stopped (a signal, a closed stdout)
// before its child was spawned, nil while it is not; nothing is left
// running, and the wind-up removes the scratch tree and closes the stream.
func stopped(ctx context.Context, during string) error {
	cause := context.Cause(ctx)
	if cause == nil {
		return nil
	}
	return exit.Refuse(RefuseStopped, "the run was stopped (%v) %s, before the vendor was spawned; nothing was left running", cause, during)
}

func (r *run) startProxy(w *World) error {
	s := r.spec
	upstream, tokenEnv := r.d.Upstream, r.d.TokenEnv
	if s.ModelEndpoint != "" {
		upstream = s.ModelEndpoint
	}
	src := loopback.TokenSource{Env: s.TokenEnv, File: s.TokenFile, FD: s.TokenFD, Decode: r.d.TokenFile}
	if src.Env == "" && src.File == "" && src.FD == nil {
		src.Env = tokenEnv
	}
	p, err := loopback.New(loopback.Config{
		Upstream: upstream, Header: r.d.UpstreamHeader, Token: src, AllowEgress: s.AllowEgress, RunID: s.Kind,
		// The child is gone when the proxy closes; a short grace keeps a
		// stopped run inside the four seconds an embedder is promised.
		ShutdownGrace: time.Second,
		// Each request goes into the stream as it ends, in the order they
		// end. The first quota answer stops the run: the vendor would sit
		// through minutes of retries, and a fleet wants the account back.
		OnRecord: func(rec loopback.Record) {
			r.emit(nil, proxyRecordEvent(rec))
			if rec.Quota != nil {
				r.stop(&quotaStop{rec: rec})
			}
		},
		Logger: r.io.Log.Named("loopback"),
		LookupEnv: func(k string) (string, bool) {
			v, ok := r.io.Env[k]
			return v, ok
		},
	})
	if err != nil {
		return err
	}
	if src.Env != "" && r.io.ForgetEnv != nil {
		if err := r.io.ForgetEnv(src.Env); err != nil {
			r.emit(nil, &record.Warning{Code: WarnTokenNotCleared, Message: fmt.Sprintf("%s was read, but could not be cleared from metaharness's own environment block (%v); the attestation does not claim it", src.Env, err)})
		} else {
			w.TokenCleared = src.Env
		}
	}
	if err := p.Start(); err != nil {
		return err
	}
	r.proxy = p
	w.ProxyAddr = strings.TrimPrefix(p.BaseURL(), "http://")
	lc, ok := r.kind.(LoopbackClient)
	if !ok {
		return fmt.Errorf("internal: --credentials loopback reached %s, which has no loopback environment; its rules refuse it", s.Kind)
	}
	if w.LoopbackEnv, err = lc.LoopbackEnv(p); err != nil {
		return err
	}
	w.LoopbackURL = p.BaseURL()
	r.happened = append(r.happened, "the loopback proxy had started")
	return nil
}

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
	home := filepath.Join(r.scratch, "version-probe")
	if err := os.Mkdir(home, 0o700); err != nil {
		return exit.Wrap(RefuseScratchWrite, err, "creating %s", home)
	}
	env := []string{"PATH=" + childPath, "HOME=" + home}
	probe := func() (string, error) {
		v, err := VersionOf(ctx, binary, env)
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
	r.events.Precede(func() record.Event {
		res := <-done
		if ctx.Err() != nil {
			return nil // stopped: the version was not read, and the stream says why
		}
		return offPin(r.caps.VersionsPinned, binary, res.v, res.err)
	})
	return nil
}

// holdToPin writes the warning for a version off the pin, or refuses it
// under --strict-version.
func (r *run) holdToPin(binary, v string, err error) error {
	warn := offPin(r.caps.VersionsPinned, binary, v, err)
	switch {
	case warn == nil:
		return nil
	case r.spec.StrictVersion && err != nil:
		return exit.Wrap(RefuseVersionUnknown, err, "--strict-version: the version of %s could not be read, so it cannot be held to the pin (%s)", binary, strings.Join(r.caps.VersionsPinned, ", "))
	case r.spec.StrictVersion:
		return exit.Refuse(RefuseVersionOffPin, "--strict-version: %s is %s, off the pin (%s); install the pinned version or drop --strict-version", binary, v, strings.Join(r.caps.VersionsPinned, ", "))
	}
	return r.events.Emit(warn)
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

// writeFiles writes the plan's scratch files with exclusive create.
func writeFiles(files []File) error {
	for _, f := range files {
		if err := newfile.Write(f.Path, []byte(f.Content), os.FileMode(f.Mode)); err != nil {
			return exit.Wrap(RefuseScratchWrite, err, "writing %s", f.Path)
		}
	}
	return nil
}

// session spawns the child and hands its pipes to the kind's session
// until its stdout ends, then winds up.
func (r *run) session(ctx context.Context, mode frame.Mode, plan *Plan) (exit.Code, error) {
	s := r.spec
	transcriptPath := filepath.Join(r.scratch, "transcript.jsonl")
	transcript, err := os.OpenFile(transcriptPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return exit.Refused, err
	}
	r.files = append(r.files, transcript)

	svc := &services{r: r, plan: plan}
	defer svc.close()
	svc.eng, err = frame.New(frame.Config{
		Mode: mode, Frame: r.frame, Kind: s.Kind, Events: r.events,
		VendorTimeout: r.runner.VendorTimeout(), Resolve: r.resolver(),
		Refuses: func(c string) string { return r.caps.Support(c).RefusedWith },
		Control: func(c record.Command) error { return svc.sess.Control(c) },
		Stderr:  r.io.Stderr,
	})
	if err != nil {
		return exit.Refused, err
	}
	eng := svc.eng
	svc.sess = r.runner.NewSession(s, plan, svc)
	answer := svc.Decide
	if a, ok := svc.sess.(Answerer); ok {
		answer = a.Answer
	}

	// The decision channel: the programs the child starts (a hook, the
	// catalogue server) ask here before a call runs.
	ln, err := net.Listen("unix", r.socket)
	if err != nil {
		return exit.Refused, exit.Wrap(RefuseDecisionSocket, err, "the decision channel cannot listen in %s", r.scratch)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = decide.Serve(serveCtx, ln, answer)
	}()
	defer func() { stopServe(); <-served }()

	c, stdout, err := Spawn(plan, r.io.Stderr)
	if err != nil {
		return exit.Refused, exit.Wrap(RefuseSpawn, err, "the vendor could not be started")
	}
	svc.setChild(c)
	if ln := c.Listener(); ln != nil {
		// The proxy's way in from inside the child's network namespace.
		if err := r.proxy.Serve(ln); err != nil {
			c.Stop(ctx)
			_ = c.Wait()
			return exit.Refused, exit.Wrap(RefuseSpawn, err, "the loopback proxy cannot serve the child's namespace")
		}
	}
	stopped := context.AfterFunc(ctx, svc.Stop)
	defer stopped()

	go r.readCommands(eng)
	terminal := svc.sess.Drive(ctx, Pipes{Stdin: c.Stdin(), Stdout: stdout, Transcript: transcript})
	if in := c.Stdin(); in != nil {
		_ = in.Close()
	}
	process := c.Wait()

	// Wind-up: pending calls are abandoned before the terminal record, so
	// the census counts them.
	_ = eng.Close()
	r.closeProxy()
	if terminal != nil {
		census := eng.Census()
		terminal.Census = &census
		_ = r.events.Emit(terminal)
	}
	reason := r.runner.CloseReason(terminal)
	if eng.Halted() {
		reason = record.ReasonSteerHalt
	}
	if err := r.events.Close(reason, process); err != nil {
		return exit.Refused, err
	}
	if rf, ok := svc.sess.(Refuser); ok {
		if err := rf.Refusal(); err != nil {
			return exit.Refused, err
		}
	}
	return r.conclude(ctx, plan, transcriptPath, process, terminal)
}

// readCommands feeds stdin lines to the engine until stdin ends, then
// tells it so: in ask mode no embedder can answer any more.
func (r *run) readCommands(eng *frame.Engine) {
	defer eng.StdinEnded()
	if r.io.Stdin == nil {
		return
	}
	br := bufio.NewReaderSize(r.io.Stdin, 64<<10)
	for {
		line, long, err := ReadBounded(br, maxCommandLine)
		switch {
		case long:
			eng.DropLongLine(maxCommandLine)
		case len(line) > 0: // blank lines too: they are numbered
			_ = eng.HandleLine(line)
		}
		if err != nil {
			return
		}
	}
}

// maxCommandLine bounds one stdin line: a frame.set carries a whole frame,
// which is never near this.
const maxCommandLine = 16 << 20

// ReadBounded reads one line of at most max bytes; a longer one is read to
// its end and reported as long, never held.
func ReadBounded(br *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > max {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

func (r *run) emit(at *string, ev record.Event) {
	var err error
	if at != nil {
		err = r.events.EmitAt(*at, ev)
	} else {
		err = r.events.Emit(ev)
	}
	if err != nil {
		r.io.Log.Warn("writing an event", zap.String("event", ev.EventName()), zap.Error(err))
	}
}

// complete adds metaharness's own facts to the vendor's opening record.
func (r *run) complete(ev *record.SessionStarted, plan *Plan) {
	if ev.HarnessVersion == nil && r.d.VersionFromProbe {
		if v := r.vendorVersion(); v != "" {
			ev.HarnessVersion = &v
		}
	}
	att := plan.Attestation
	ev.Hermetic = &att
	ev.Transcript = &record.TranscriptRef{Path: filepath.Join(r.scratch, "transcript.jsonl")}
	ev.ContextFiles = contextfile.Records(r.context, r.d.ContextChannel)
	if r.contract != nil {
		ev.Withheld = []record.Withheld{}
		ops := []string{}
		for _, e := range r.contract.Entries {
			op := mcpserve.OperationOf(e.Name)
			if op == "" {
				ev.Withheld = append(ev.Withheld, record.Withheld{Tool: r.d.CatalogueName(e.Published()), Reason: "this build performs no entry named " + e.Name})
				continue
			}
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
		ev.AvailableOperations = ops
	}
	if r.d.Rules.DefaultVerbs(r.spec) {
		ev.Withheld = []record.Withheld{}
		ev.AvailableOperations = DefaultSurface(r.spec).Operations()
	}
}

// resolver maps a call to its operations and subjects for the engine: the
// kind's own reading, except that on a run serving the default verbs those
// verbs, under the names the kind renders them, are read the way mcp-serve
// reads them (tool_invoke by the entry it names), so that the frame decides
// what the call behind tool_invoke does.
func (r *run) resolver() func(string, json.RawMessage) frame.Resolution {
	kind := r.runner.Resolve(r.contract)
	if !r.d.Rules.DefaultVerbs(r.spec) {
		return kind
	}
	surface := DefaultSurface(r.spec)
	verbs := map[string]string{}
	for _, v := range mcpserve.Verbs() {
		verbs[r.d.CatalogueName(v)] = v
	}
	return func(tool string, input json.RawMessage) frame.Resolution {
		v, ok := verbs[tool]
		if !ok {
			return kind(tool, input)
		}
		c := surface.Resolve(v, input)
		res := frame.Resolution{Subjects: c.Subjects, Catalogue: c.Catalogue}
		if c.Operation != "" {
			res.Operations = []frame.Operation{{Op: c.Operation}}
		}
		return res
	}
}

// closeProxy closes the proxy once the child is gone: a request is
// recorded (and put into the stream) when its handler ends, and Close waits
// for the handlers, so every request is in the stream before session.ended.
func (r *run) closeProxy() {
	if r.proxy == nil {
		return
	}
	if err := r.proxy.Close(); err != nil {
		r.io.Log.Warn("closing the loopback proxy", zap.Error(err))
	}
}

// conclude runs the auditor, prints the report when an audit is owed,
// writes --attestation and --retain-dir, and computes the exit code. The
// attestation is written whatever went wrong after the session: a stopped
// run, an auditor that could not give a verdict, a sink that failed, each
// then exit 2, the document saying so.
func (r *run) conclude(ctx context.Context, plan *Plan, transcriptPath string, process *record.Process, terminal *record.SessionEnded) (exit.Code, error) {
	s := r.spec
	if s.RetainDir != "" {
		if err := copyFile(transcriptPath, filepath.Join(s.RetainDir, "transcript.jsonl")); err != nil {
			fmt.Fprintf(r.io.Stderr, "metaharness: retain-failed: copying the transcript into --retain-dir %s: %v\n", s.RetainDir, err)
		}
	}
	failed := len(r.events.Failures()) > 0
	if r.spec.Output == OutputFinal && terminal != nil && terminal.FinalAnswer != nil {
		if _, err := fmt.Fprintln(r.io.Stdout, terminal.FinalAnswer.Text); err != nil {
			fmt.Fprintln(r.io.Stderr, exit.Line(exit.Refuse(RefuseStdoutClosed, "the final answer could not be written to stdout (%v); the run exits 2", err)))
			failed = true
		}
	}
	var quota *quotaStop
	errors.As(context.Cause(ctx), &quota)
	var result *attest.AuditorResult
	var auditErr error
	if r.auditor != nil {
		switch stopped := context.Cause(ctx); {
		case quota != nil:
			// The upstream served no session to audit; exit 4 says why.
		case stopped != nil:
			// A stopped run has no time left for an auditor.
			auditErr = exit.Refuse(attest.RefuseAuditorInterrupted, "the run was stopped (%v) before the auditor ran, so there is no audit verdict", stopped)
		default:
			result, auditErr = r.auditor.Run(ctx, transcriptPath, r.io.Stderr)
		}
	}
	ev := attest.Evaluate(r.tap.Lines(), attest.Launch{
		Kind: s.Kind, Class: r.caps.Adapter.Class, Hermetic: string(s.Hermetic), Audit: s.Audit,
		Credentials: string(s.Credentials), PlannedCwd: r.cwd, PlannedMCPServers: plan.MCPServers, StandInCredential: plan.StandInCredential,
		Pins: r.caps.VersionsPinned,
	})
	doc := ev.Document(s.Kind, s.AuditOwed(), result, process)
	if r.proxy != nil {
		doc.Loopback = &attest.Loopback{Counters: r.proxy.Counters(), Requests: r.proxy.Records()}
	}
	doc.StreamFailures = r.events.Failures()
	if quota != nil {
		doc.UpstreamQuota = &quota.rec
		doc.ExitCode = int(exit.Quota)
	}
	if auditErr != nil || failed {
		doc.ExitCode = int(exit.Refused)
	}
	r.ended = &ended{doc: doc, terminal: terminal, quota: quota}
	var err error
	if r.ended.written, err = s.writeAttestations(doc); err != nil {
		return exit.Refused, err
	}
	if auditErr != nil {
		return exit.Refused, auditErr
	}
	code, err := ev.Conclude(r.io.Stderr, s.AuditOwed(), result, process)
	if quota != nil {
		r.sayQuota(quota)
		if err == nil && !failed {
			code = exit.Quota
		}
	}
	if failed && err == nil {
		return exit.Refused, nil // named on stderr when the sink failed
	}
	return code, err
}

// quotaStop is the cause of a run stopped by the upstream's first quota
// answer (loopback.Quota).
type quotaStop struct{ rec loopback.Record }

func (q *quotaStop) Error() string {
	return fmt.Sprintf("the model API answered %s %s with %s", q.rec.Method, q.rec.Path, q.rec.Quota.Phrase())
}

// line is the one line a fleet's usage-limit rule is meant to match.
func (q *quotaStop) line() string {
	return fmt.Sprintf("metaharness: usage-limit: %v; the run was stopped at that first answer instead of sitting through the vendor's retries (exit %d: retry after a cooldown, or on another account)", q, exit.Quota)
}

// sayQuota prints q's line: on stdout under --output final, where it is
// then the only line, else on stderr, for stdout carries the event stream
// (whose LOOPBACK_UPSTREAM_QUOTA warning says the same).
func (r *run) sayQuota(q *quotaStop) {
	line := q.line()
	if r.spec.Output == OutputFinal {
		if _, err := fmt.Fprintln(r.io.Stdout, line); err == nil {
			return
		}
	}
	fmt.Fprintln(r.io.Stderr, line)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return newfile.Write(to, b, 0o600)
}
