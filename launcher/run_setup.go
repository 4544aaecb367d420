package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/internal/treepath"
	"github.com/metaharness/metaharness/launcher/contextfile"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
	"go.uber.org/zap"
)

// tree is the run's scratch tree: every kind's child gets a scratch HOME,
// TMPDIR and (without --cwd) working directory in it, the plan's files and
// the decision channel live there, and cleanup removes it.
type tree struct {
	dir     string   // the runtime directory it is in (runtimedir.go)
	scratch *scratch // nil until made
	root    string
	cwd     string // the child's working directory
	socket  string // the decision channel
}

// transcript is where the child's raw record is kept (--retain-dir and
// the auditor read it).
func (t tree) transcript() string { return filepath.Join(t.root, "transcript.jsonl") }

// setUp is the second phase: the scratch tree, whether the host can
// confine the child, and the loopback proxy. What it made goes into the
// world the plan reads.
func (r *run) setUp(ctx context.Context) (*kind.World, error) {
	var err error
	if r.tree.dir, err = runtimeDir(r.io.Env); err != nil {
		return nil, err
	}
	for _, dead := range reclaimScratch(r.tree.dir) {
		r.io.Log.Debug("reclaimed the scratch tree of a dead run", zap.String("path", dead))
	}
	if r.tree.scratch, err = newScratch(r.tree.dir); err != nil {
		return nil, err
	}
	r.tree.root = r.tree.scratch.root
	for _, d := range []string{"home", "tmp", "work"} {
		if err := os.Mkdir(filepath.Join(r.tree.root, d), 0o700); err != nil {
			return nil, err
		}
	}
	r.tree.socket = filepath.Join(r.tree.root, "decisions.sock")
	r.tree.cwd = filepath.Join(r.tree.root, "work")
	if r.spec.Cwd != "" {
		r.tree.cwd = r.spec.Cwd
	}
	w := &kind.World{Env: r.io.Env, RuntimeDir: r.tree.dir, Scratch: r.tree.root, Self: r.io.Self, DecisionSocket: r.tree.socket, UID: os.Geteuid(), GID: os.Getegid(), NonDumpable: !confine.Dumpable()}
	r.happened = append(r.happened, "the scratch tree was created")
	if r.d.Confined && !r.spec.Unconfined {
		if w.Controls, err = confinable(r.io.Self, r.io.Env, confine.Probe); err != nil {
			if lim := hostLimit(err); lim != nil {
				// A limit met is not a host that cannot confine: the
				// child is not run with less than its plan asks.
				return nil, lim
			}
			w.Unconfinable = err.Error()
			r.emit(nil, &record.Warning{Code: WarnConfinementUnavailable, Message: "the child runs unconfined, and the attestation says so: " + err.Error()})
		}
	}
	if proxied(r.spec, r.kind) {
		if err := r.startProxy(w); err != nil {
			return nil, err
		}
	}
	return w, stopped(ctx, "while the scratch tree and the proxy were set up")
}

// observe is the third phase: what the plan needs to know of the world
// beyond the run's own making: the vendor binary and its version, the
// memory files around the cwd, the inputs as the kind hands them over,
// and whatever the kind looks at in its binary (Observer).
func (r *run) observe(ctx context.Context, w *kind.World) error {
	var err error
	childPath := kind.ChildPath(r.io.Env["HOME"])
	if w.Binary, err = lookPath(r.d.Binary, childPath); err != nil {
		return vendorNotFound(r.d, err)
	}
	if err := r.checkCwdHoldsNoLaunch(w.Binary, childPath); err != nil {
		return err
	}
	if err := r.checkVersion(ctx, w.Binary, childPath); err != nil {
		return err
	}
	if r.spec.Cwd != "" {
		if w.Git, err = findGitDirs(r.spec.Cwd); err != nil {
			r.emit(nil, &record.Warning{Code: WarnGitDirNotBound, Message: "--cwd " + r.spec.Cwd + " is a git worktree whose git directory metaharness does not bind into the child's view, so git cannot work there: " + err.Error()})
		}
		r.gitSeal = observeGitSeal(r.spec.Cwd, w.Git, w)
	}
	if err := r.observeCustody(w); err != nil {
		return err
	}
	walk, err := attest.WalkMemory(r.d.Memory.Shapes, r.tree.cwd)
	if err != nil {
		return exit.Wrap(RefuseMemoryWalk, err, "the memory-file walk from %s failed", r.tree.cwd)
	}
	w.MemoryAbove, w.MemoryAtRoot = walk.Above, walk.AtRoot
	if len(r.in.context) > 0 {
		w.Context = contextfile.Render(r.in.context)
		w.ContextFiles = r.in.context
	}
	if c := r.in.contract; c != nil {
		w.CatalogueCopy = filepath.Join(r.tree.root, "catalogue.json")
		w.CatalogueTools, w.CatalogueWrites = c.Published(), c.Writes()
		for _, e := range c.Entries {
			w.CatalogueDecls = append(w.CatalogueDecls, kind.ToolDecl{Name: e.Published(), Summary: e.Summary, Input: e.InputSchema()})
		}
	}
	if o, ok := r.kind.(kind.Observer); ok {
		if err := o.Observe(ctx, r.spec, w); err != nil {
			return err
		}
		r.happened = append(r.happened, "the vendor binary was observed")
	}
	return nil
}

// checkCwdHoldsNoLaunch refuses a --cwd that holds what a later run
// starts: the child may write there, so it could plant a program that the
// caller's next run (its --version probe, doctor, the spawn) executes
// outside any confinement. The vendor binary, each directory on the
// child's PATH, metaharness itself and its cache count, each through every
// link of its chain (treepath.Hops: the first, the last and each between);
// and each absolute directory on the caller's own PATH, whose
// programs the caller (and the auditor, which inherits that PATH) runs
// next. A relative PATH entry names whatever directory the caller stands
// in, planted or not, and is not judged.
func (r *run) checkCwdHoldsNoLaunch(binary, childPath string) error {
	if r.spec.Cwd == "" {
		return nil
	}
	cwd, err := filepath.EvalSymlinks(r.spec.Cwd)
	if err != nil {
		return exit.Wrap(RefuseCWDNotADirectory, err, "--cwd %s cannot be resolved", r.spec.Cwd)
	}
	launched := []string{binary, r.io.Self, cacheBase(r.io.Env)}
	launched = append(launched, filepath.SplitList(childPath)...)
	launched = append(launched, filepath.SplitList(r.io.Env["PATH"])...)
	for _, p := range launched {
		if !filepath.IsAbs(p) {
			continue
		}
		// A path not there yet is one the child could make; a link in the
		// middle of a chain it could replace as well as the first.
		held := []string{filepath.Clean(p)}
		if hops, err := treepath.Hops(p); err == nil {
			held = append(held, hops...)
		}
		for _, q := range held {
			if q == cwd || strings.HasPrefix(q, strings.TrimSuffix(cwd, "/")+"/") {
				return exit.Refuse(RefuseCWDHoldsLaunch, "--cwd %s: the child may write there, and it holds %s, which a later run or you start (the vendor binary, a directory on the child's PATH or on yours, metaharness itself or its cache), so the child could plant a program that runs outside any confinement; name a tree that holds none of them", r.spec.Cwd, q)
			}
		}
	}
	return nil
}

// write is the fourth phase: the pure plan, held to the argument limits,
// and everything it names written and read back (the scratch files, the
// catalogue's copy) and put to the binary where the kind can (Preflighter).
func (r *run) write(ctx context.Context, w *kind.World) (*kind.Plan, error) {
	plan, err := r.runner.Plan(r.spec, w)
	if err != nil {
		return nil, err
	}
	if err := contextfile.CheckArgSizes(append([]string{plan.Program}, plan.Args...), r.in.context); err != nil {
		return nil, err
	}
	for _, d := range plan.Dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, exit.Wrap(kind.RefuseScratchWrite, err, "creating %s", d)
		}
	}
	if err := writeFiles(plan.Files); err != nil {
		return nil, err
	}
	if err := r.registerCustody(plan.Confinement); err != nil {
		return nil, err
	}
	r.happened = append(r.happened, "the scratch files were written")
	if r.in.contract != nil {
		if err := mcpserve.WriteScratchCopy(r.in.contract, w.CatalogueCopy); err != nil {
			var ref *exit.Refusal
			if errors.As(err, &ref) && ref.Name == mcpserve.RefuseCopyDiffers {
				ref.Message += "; " + strings.Join(r.happened, ", ") + "; no vendor session was started"
			}
			return nil, err
		}
	}
	if err := stopped(ctx, "while the launch was planned and written"); err != nil {
		return nil, err
	}
	if p, ok := r.kind.(kind.Preflighter); ok {
		if err := p.Preflight(ctx, plan); err != nil {
			return nil, err
		}
	}
	return plan, nil
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

// proxied reports whether the run's model traffic passes the loopback
// proxy, which then reads the model's answers (H13): under --credentials
// loopback, where it holds the token; under api-key, where the child's own
// key passes through it; and under none with --model-endpoint, where it
// attaches nothing. Only a kind whose child can be pointed at it.
func proxied(s *kind.Spec, k kind.Kind) bool {
	if _, ok := k.(kind.LoopbackClient); !ok {
		return false
	}
	return s.Credentials == kind.CredentialsLoopback || s.Credentials == kind.CredentialsAPIKey ||
		s.Credentials == kind.CredentialsNone && s.ModelEndpoint != ""
}

// noProxyWhy says why a run has no proxy (proxied is false).
func noProxyWhy(s *kind.Spec, k kind.Kind) string {
	if _, ok := k.(kind.LoopbackClient); !ok {
		return s.Kind + " dials its model API itself"
	}
	return "--credentials none without --model-endpoint"
}

func (r *run) startProxy(w *kind.World) error {
	s := r.spec
	upstream, tokenEnv := r.d.Upstream, r.d.TokenEnv
	if s.ModelEndpoint != "" {
		upstream = s.ModelEndpoint
	}
	var src loopback.TokenSource
	mode := loopback.AttachToken
	switch s.Credentials {
	case kind.CredentialsAPIKey:
		mode = loopback.PassThrough
	case kind.CredentialsNone:
		mode = loopback.NoCredential
	default:
		src = loopback.TokenSource{Env: s.TokenEnv, File: s.TokenFile, FD: s.TokenFD, Decode: r.d.TokenFile}
		if src.Env == "" && src.File == "" && src.FD == nil {
			src.Env = tokenEnv
		}
	}
	stops := &loopback.Stopper{}
	p, err := loopback.New(loopback.Config{
		Upstream: upstream, Header: r.d.UpstreamHeader, Token: src, Credentials: mode, AllowEgress: s.AllowEgress, RunID: s.Kind,
		// The wire view reads the model's answers (H13), and the key goes
		// only with the request the kind's vendor makes of the model.
		ModelAPI: r.d.ModelAPI, AllowPaths: loopback.ModelAPIPaths(r.d.ModelAPI),
		// The child is gone when the proxy closes; a short grace keeps a
		// stopped run inside the four seconds an embedder is promised.
		ShutdownGrace: time.Second,
		// Each request goes into the stream as it ends, in the order they
		// end. An answer that will not change stops the run (the
		// Stopper's rules): the vendor would sit through minutes of
		// retries of a quota, a rejected key or an endpoint nobody
		// serves, and a fleet wants to know at once. A brief throttle is
		// waited out within the budget first, each wait in the stream.
		OnRecord: func(rec loopback.Record) {
			r.emit(nil, proxyRecordEvent(rec))
			if st := stops.Observe(rec); st != nil {
				r.stop(&upstreamStop{UpstreamStop: *st, credentials: s.Credentials})
			}
		},
		// Only the vendor's own connections reach the model (run_admit.go).
		Admit:          r.admit(),
		ThrottleBudget: s.Throttle(),
		OnThrottle: func(method, path string, retry int, th loopback.Throttle) {
			r.emit(nil, throttleEvent(method, path, retry, th, s.Throttle()))
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
	if r.tel.run != nil {
		r.tel.run.Secrets(p.Placeholder()) // never in what the content opt-in exports
	}
	w.ProxyAddr = strings.TrimPrefix(p.BaseURL(), "http://")
	w.GateAddr = strings.TrimPrefix(p.GateURL(), "http://")
	lc, ok := r.kind.(kind.LoopbackClient)
	if !ok {
		return fmt.Errorf("internal: --credentials loopback reached %s, which has no loopback environment; its rules refuse it", s.Kind)
	}
	if w.LoopbackEnv, err = lc.LoopbackEnv(p); err != nil {
		return err
	}
	w.LoopbackURL = p.BaseURL()
	if mode != loopback.AttachToken {
		w.RunHeader = p.Placeholder()
	}
	if p.Wire() != nil {
		w.Wire = r.d.ModelAPI
	}
	r.happened = append(r.happened, "the loopback proxy had started")
	return nil
}

// writeFiles writes the plan's scratch files with exclusive create.
func writeFiles(files []kind.File) error {
	for _, f := range files {
		if err := newfile.Write(f.Path, []byte(f.Content), os.FileMode(f.Mode)); err != nil {
			return exit.Wrap(kind.RefuseScratchWrite, err, "writing %s", f.Path)
		}
	}
	return nil
}
