package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/launcher/claude"
)

// The parallel runs: N governed runs started at once against the same N
// bare runs, for N = 1, 4, 16 and 32 of the stand-in claude
// (testkit/fakevendor/fakeclaude, holding a session with the scripted
// model: one tool call that reads the notes, then an answer), and N = 4
// of the real Claude Code where it may run. Per run: wall time from the
// common start to its exit, the CPU its whole process tree used (the
// rusage wait4 reports, which holds every descendant reaped), and the peak
// RSS of each of metaharness's own processes in it (sampled; see rss).

// shape is one kind of run in a batch.
type shape struct {
	name     string
	governed bool
	owned    bool // a catalogue: the tool call goes through mcp-serve, not the hook
}

var (
	bareShape      = shape{name: "bare"}
	hookShape      = shape{name: "governed, its Read at the hook", governed: true}
	catalogueShape = shape{name: "governed, a catalogue call through mcp-serve", governed: true, owned: true}
)

// outcome is one run's measurement.
type outcome struct {
	wall, cpu time.Duration
	rss       map[string]mem // role → its processes' peaks
	failure   string         // "" when the run did its work and ended well
}

// mem is a process's peak resident set (VmHWM) and the largest part of it
// its own, not file-backed (RssAnon, as sampled), in KiB. The rest of a
// metaharness process's resident set is mostly the binary's pages, which
// the page cache holds once for every process of the host.
// mem is a process's peak RSS (VmHWM), of it the private part (RssAnon),
// and its peak PSS: its pages, each shared one divided among the processes
// that map it (the binary's pages, which every metaharness process on the
// host maps, count once over all of them), in KiB.
type mem struct{ hwm, anon, pss uint64 }

// ownTotal is the sum of the peaks of metaharness's own processes, which
// live side by side through the run: its own RSS, and the part of it that
// is private.
func (o outcome) ownTotal() mem {
	var t mem
	for _, m := range o.rss {
		t.hwm += m.hwm
		t.anon += m.anon
		t.pss += m.pss
	}
	return t
}

// roles are metaharness's processes in a run, as rss names them by
// their verbs, in the order they start.
var roles = []string{"run", "internal-init", "mcp-serve", "internal-hook"}

// rolesOf are the roles seen in outs: those of roles first, then any other.
func rolesOf(outs []outcome) []string {
	var other []string
	for _, o := range outs {
		for r := range o.rss {
			if !slices.Contains(roles, r) && !slices.Contains(other, r) {
				other = append(other, r)
			}
		}
	}
	slices.Sort(other)
	return append(slices.Clone(roles), other...)
}

// parallelRuns prints the parallel rows: rounds of interleaved batches at
// each N, the stand-in's shapes, then the real Claude Code's at realN.
func parallelRuns(mh, standin, root string, ns []int, rounds, realN int, verbose bool) error {
	s, err := newRSS(mh)
	if err != nil {
		return err
	}
	defer s.close()
	b := &batcher{mh: mh, root: root, rss: s}
	shapes := []shape{bareShape, hookShape, catalogueShape}
	for _, sh := range shapes { // a warm-up of each fills the cache and the page cache
		if _, err := b.run(standin, false, sh, 1); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	// At least rounds batches at each N, and at least minRuns runs: a
	// median of three runs at N = 1 would be noise.
	batches := func(n int) int { return max(rounds, (minRuns+n-1)/n) }
	fmt.Printf("N governed runs of the stand-in claude started at once vs the same N bare (a session with the scripted model: one tool call reading the notes, then the answer); at least %d rounds and %d runs at each N, interleaved; per run, medians\n", rounds, minRuns)
	type key struct {
		n  int
		sh string
	}
	got := map[key][]outcome{}
	for r := range batches(slices.Min(ns)) {
		for _, n := range ns {
			if r >= batches(n) {
				continue
			}
			// The order of the shapes turns with the round, so that a drift
			// of the machine falls on each alike.
			for i := range shapes {
				sh := shapes[(i+r)%len(shapes)]
				outs, err := b.run(standin, false, sh, n)
				if err != nil {
					return err
				}
				got[key{n, sh.name}] = append(got[key{n, sh.name}], outs...)
			}
		}
	}
	ratios, added := map[int]float64{}, map[int]time.Duration{}
	failedAtMax := 0
	var maxOwn mem
	for _, n := range ns {
		bare := got[key{n, bareShape.name}]
		fmt.Printf("  N = %d\n", n)
		printRow(bareShape.name+" stand-in", bare, nil, verbose)
		for _, sh := range shapes[1:] {
			outs := got[key{n, sh.name}]
			cpu, _, more := printRow(sh.name, outs, bare, verbose)
			if sh == hookShape {
				ratios[n], added[n] = cpu, more
			}
			for _, o := range outs {
				t := o.ownTotal()
				maxOwn.hwm, maxOwn.anon = max(maxOwn.hwm, t.hwm), max(maxOwn.anon, t.anon)
			}
		}
		if n == slices.Max(ns) {
			for _, sh := range shapes {
				failedAtMax += failures(got[key{n, sh.name}])
			}
		}
	}
	lo, hi := slices.Min(ns), slices.Max(ns)
	fmt.Printf("  metaharness's own peak RSS per run (its processes' peaks summed), at most %.1f MiB   target <= 40 MiB: %s\n", mib(maxOwn.hwm), met(mib(maxOwn.hwm) <= 40))
	fmt.Printf("    of it private (anonymous, not the binary's shared pages), at most %.1f MiB: %s\n", mib(maxOwn.anon), met(mib(maxOwn.anon) <= 40))
	var pss []float64
	for _, sh := range shapes[1:] {
		for _, o := range succeeded(got[key{hi, sh.name}]) {
			pss = append(pss, float64(o.ownTotal().pss))
		}
	}
	if len(pss) > 0 {
		fmt.Printf("    as a busy host pays it (PSS at N = %d, a shared page divided among the processes mapping it; median of the runs' peaks), %.1f MiB: %s\n", hi, medianF(pss)/1024, met(medianF(pss)/1024 <= 40))
	}
	if r1, r16 := ratios[lo], ratios[16]; r1 > 0 && r16 > 0 {
		change := r16/r1 - 1
		fmt.Printf("  governed/bare CPU at N = 16 vs N = %d (the hook's shape): %.2fx vs %.2fx, %+.1f%%   target within 10%%: %s\n", lo, r16, r1, 100*change, met(change <= 0.10 && change >= -0.10))
		// The ratio divides by the bare stand-in's few ms, which move more
		// between N than what metaharness adds does: that, apart.
		a1, a16 := added[lo], added[16]
		grew := a16.Seconds()/a1.Seconds() - 1
		fmt.Printf("    the CPU metaharness adds to a run (governed less bare) at N = 16 vs N = %d: %.1f vs %.1f ms, %+.1f%%: %s within 10%%\n", lo, ms(a16), ms(a1), 100*grew, met(grew <= 0.10 && grew >= -0.10))
	}
	fmt.Printf("  runs failing at N = %d: %d of %d   target none: %s\n", hi, failedAtMax, batches(hi)*hi*len(shapes), met(failedAtMax == 0))

	fmt.Println()
	real, why := realClaude()
	if real == "" || realN < 1 {
		if realN < 1 {
			why = "-real-parallel is 0"
		}
		fmt.Printf("N governed runs of the real Claude Code at once: not measured: %s\n", why)
		return nil
	}
	fmt.Printf("%d governed runs of Claude Code %s started at once vs %d bare (one Read, then an answer); %d rounds, interleaved; per run, medians\n", realN, claude.Pin, realN, rounds)
	var gov, bare []outcome
	for r := range rounds {
		for i := range 2 {
			sh := []shape{hookShape, bareShape}[(i+r)%2]
			outs, err := b.run(real, true, sh, realN)
			if err != nil {
				return err
			}
			if sh.governed {
				gov = append(gov, outs...)
			} else {
				bare = append(bare, outs...)
			}
		}
	}
	printRow("bare claude.exe", bare, nil, verbose)
	printRow("metaharness run claude", gov, bare, verbose)
	if n := failures(gov) + failures(bare); n > 0 {
		fmt.Printf("  %d runs failed\n", n)
	}
	return nil
}

// printRow prints one shape's medians, and its ratios to base when given;
// it returns the CPU and wall ratios.
func printRow(name string, outs, base []outcome, verbose bool) (cpuRatio, wallRatio float64, added time.Duration) {
	ok := succeeded(outs)
	if len(ok) == 0 {
		fmt.Printf("    %-48s every run failed: %s\n", name, outs[0].failure)
		return 0, 0, 0
	}
	cpu, wall := medianOf(ok, func(o outcome) time.Duration { return o.cpu }), medianOf(ok, func(o outcome) time.Duration { return o.wall })
	line := fmt.Sprintf("    %-48s cpu %7.1f ms  wall %7.1f ms", name, ms(cpu), ms(wall))
	if b := succeeded(base); len(b) > 0 {
		bareCPU := medianOf(b, func(o outcome) time.Duration { return o.cpu })
		cpuRatio, added = cpu.Seconds()/bareCPU.Seconds(), cpu-bareCPU
		wallRatio = wall.Seconds() / medianOf(b, func(o outcome) time.Duration { return o.wall }).Seconds()
		line += fmt.Sprintf("  governed/bare cpu %.2fx (%+.1f ms) wall %.2fx", cpuRatio, ms(cpu-bareCPU), wallRatio)
		var parts []string
		for _, role := range rolesOf(ok) {
			var hwm, anon []float64
			for _, o := range ok {
				if m, seen := o.rss[role]; seen {
					hwm, anon = append(hwm, float64(m.hwm)), append(anon, float64(m.anon))
				}
			}
			if len(hwm) > 0 {
				parts = append(parts, fmt.Sprintf("%s %.1f (%.1f)", role, medianF(hwm)/1024, medianF(anon)/1024))
			}
		}
		var hwm, anon []float64
		for _, o := range ok {
			t := o.ownTotal()
			hwm, anon = append(hwm, float64(t.hwm)), append(anon, float64(t.anon))
		}
		var pss []float64
		for _, o := range ok {
			pss = append(pss, float64(o.ownTotal().pss))
		}
		line += fmt.Sprintf("\n    %48s peak RSS MiB (private): %s; own total %.1f (%.1f), max %.1f (%.1f); PSS %.1f, max %.1f", "", strings.Join(parts, ", "),
			medianF(hwm)/1024, medianF(anon)/1024, slices.Max(hwm)/1024, slices.Max(anon)/1024, medianF(pss)/1024, slices.Max(pss)/1024)
	}
	if n := len(outs) - len(ok); n > 0 {
		line += fmt.Sprintf("\n    %48s %d of %d runs FAILED, the first: %s", "", n, len(outs), firstFailure(outs))
	}
	fmt.Println(line)
	if verbose {
		for i, o := range outs {
			t := o.ownTotal()
			fmt.Printf("      run %2d: cpu %7.1f ms  wall %7.1f ms  own RSS %6.1f MiB (private %4.1f) %v %s\n", i+1, ms(o.cpu), ms(o.wall), mib(t.hwm), mib(t.anon), o.rss, o.failure)
		}
	}
	return cpuRatio, wallRatio, added
}

func succeeded(outs []outcome) []outcome {
	var ok []outcome
	for _, o := range outs {
		if o.failure == "" {
			ok = append(ok, o)
		}
	}
	return ok
}

func failures(outs []outcome) int { return len(outs) - len(succeeded(outs)) }

func firstFailure(outs []outcome) string {
	for _, o := range outs {
		if o.failure != "" {
			return o.failure
		}
	}
	return ""
}

func medianOf(outs []outcome, f func(outcome) time.Duration) time.Duration {
	ds := make([]time.Duration, len(outs))
	for i, o := range outs {
		ds[i] = f(o)
	}
	return median(ds)
}

func mib(kb uint64) float64 { return float64(kb) / 1024 }

// batcher starts batches of runs, each in a world of its own.
type batcher struct {
	mh, root string
	rss      *rss
	seq      int
}

// run starts n runs of shape at once, bin the vendor (real: the real
// Claude Code, else the stand-in), and waits for them all.
func (b *batcher) run(bin string, real bool, sh shape, n int) ([]outcome, error) {
	type prepared struct {
		cmd *exec.Cmd
		up  *scripted.Server
		out bytes.Buffer
		dir string
	}
	runs := make([]*prepared, n)
	for i := range runs {
		b.seq++
		name := fmt.Sprintf("par-%d", b.seq)
		o, err := newOperator(b.root, name, "claude", bin)
		if err != nil {
			return nil, err
		}
		notes := filepath.Join(o.tree, "notes.md")
		if err := os.WriteFile(notes, []byte("the release is on Friday\n"), 0o644); err != nil {
			return nil, err
		}
		p := &prepared{dir: filepath.Join(b.root, name)}
		sc := script(notes)
		var more []string
		if sh.owned {
			contract := filepath.Join(b.root, name, "tools.yaml")
			if err := os.WriteFile(contract, []byte(readContract), 0o644); err != nil {
				return nil, err
			}
			sc.Turns[0].ToolCall = &scripted.ToolCall{Name: claude.OwnedPrefix + "read_file", Input: json.RawMessage(`{"path":"notes.md"}`)}
			more = []string{"--catalogue", contract}
		}
		p.up = scripted.NewAnthropicServer(sc)
		task := prompt
		if !real {
			task = filepath.Join(o.tree, "session.script")
			if err := os.WriteFile(task, []byte("init\nmodel "+prompt+"\nresult\n"), 0o644); err != nil {
				return nil, err
			}
		}
		switch {
		case sh.governed:
			p.cmd = o.governed(b.mh, p.up.URL(), more...)
			p.cmd.Args[len(p.cmd.Args)-1] = task
		case real:
			if p.cmd, err = bareClaude(bin, o, p.up.URL()); err != nil {
				return nil, err
			}
		default:
			p.cmd = exec.Command(bin, "-p", "--output-format", "stream-json", "--verbose", "--allowedTools", "Read", "--", task)
			p.cmd.Dir = o.tree
			p.cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + o.home, "ANTHROPIC_BASE_URL=" + p.up.URL(), "ANTHROPIC_API_KEY=" + token}
		}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		runs[i] = p
	}
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range runs {
		if err := p.cmd.Start(); err != nil {
			return nil, err
		}
		b.rss.watch(p.cmd.Process.Pid)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.cmd.Wait()
			o := &outs[i]
			o.wall = time.Since(start)
			o.rss = b.rss.forget(p.cmd.Process.Pid)
			if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				o.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			}
			switch out := p.out.String(); {
			case err != nil:
				o.failure = fmt.Sprintf("%v: %s", err, lastLines(out, 3))
			case !sawNotes(p.up.Requests()):
				o.failure = "the model never saw the notes: " + lastLines(out, 3)
			case sh.governed && !strings.Contains(lastLines(out, 1), `"event":"stream.closed"`):
				o.failure = "the stream did not end with stream.closed: " + lastLines(out, 3)
			}
		}()
	}
	wg.Wait()
	for _, p := range runs {
		p.up.Close()
		_ = os.RemoveAll(p.dir)
	}
	return outs, nil
}

// readContract is a one-entry tool contract: fs.read, to the model
// mcp__metaharness__read_file.
const readContract = "format: metaharness.tool-contract/1\nentries:\n  - {name: fs.read, summary: Read a file., input: {type: object, properties: {path: {type: string}}, required: [path]}, renderings: {mcp: read_file}}\n"

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// rss samples the peak RSS (VmHWM) of metaharness's own processes: those
// whose executable is the metaharness binary, by device and inode (the
// init runs in a mount namespace of its own, where the path differs), each
// attributed to the watched run it descends from and named by its verb.
// A process is seen from its first sample to its last, so a short one (a
// hook) is caught only when a sample falls in its life, and the peak is
// the last one read.
type rss struct {
	dev, ino uint64
	stop     chan struct{}
	done     chan struct{}

	mu    sync.Mutex
	tops  map[int]bool
	owner map[int]int            // pid → the watched run it descends from
	peaks map[int]map[string]mem // watched run → role → peaks
}

// minRuns is the fewest runs of each shape measured at any N.
const minRuns = 16

// sampleEvery is the sampling period: a /proc walk costs a fraction of a
// millisecond per hundred processes.
const sampleEvery = 10 * time.Millisecond

func newRSS(mh string) (*rss, error) {
	fi, err := os.Stat(mh)
	if err != nil {
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	s := &rss{dev: uint64(st.Dev), ino: st.Ino, stop: make(chan struct{}), done: make(chan struct{}),
		tops: map[int]bool{}, owner: map[int]int{}, peaks: map[int]map[string]mem{}}
	go s.loop()
	return s, nil
}

func (s *rss) close() { close(s.stop); <-s.done }

func (s *rss) watch(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tops[pid], s.owner[pid], s.peaks[pid] = true, pid, map[string]mem{}
}

// forget ends the watch of a run that has exited and returns its peaks.
func (s *rss) forget(pid int) map[string]mem {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peaks[pid]
	delete(s.tops, pid)
	delete(s.peaks, pid)
	for k, v := range s.owner {
		if v == pid {
			delete(s.owner, k)
		}
	}
	return p
}

func (s *rss) loop() {
	defer close(s.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

func (s *rss) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tops) == 0 {
		return
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fi, err := os.Stat("/proc/" + e.Name() + "/exe")
		if err != nil {
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); uint64(st.Dev) != s.dev || st.Ino != s.ino {
			continue
		}
		top, ok := s.runOf(pid)
		if !ok {
			continue
		}
		role := s.role(pid, top)
		if role == "" {
			continue // a fork not yet exec'd: it shares its parent's memory
		}
		if m, ok := memOf(pid); ok {
			p := s.peaks[top][role]
			s.peaks[top][role] = mem{max(p.hwm, m.hwm), max(p.anon, m.anon), max(p.pss, m.pss)}
		}
	}
}

// runOf is the watched run pid descends from, walking up its parents.
func (s *rss) runOf(pid int) (int, bool) {
	var chain []int
	for p := pid; p > 1; {
		if top, ok := s.owner[p]; ok {
			for _, c := range chain {
				s.owner[c] = top
			}
			return top, true
		}
		chain = append(chain, p)
		pp, err := parentPid(p)
		if err != nil {
			return 0, false
		}
		p = pp
	}
	return 0, false
}

// role names a process of a run by its verb: the watched pid is the run,
// any other by its first argument; "" for a copy of the run not yet
// exec'd.
func (s *rss) role(pid, top int) string {
	if pid == top {
		return "run"
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	args := strings.Split(string(b), "\x00")
	if len(args) < 2 || args[1] == "run" {
		return ""
	}
	return args[1]
}

func parentPid(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: the fields
	// follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return strconv.Atoi(f[1])
}

// memOf is a process's peak resident set so far and its anonymous
// resident set now, in KiB.
func memOf(pid int) (mem, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return mem{}, false
	}
	var m mem
	found := 0
	for _, l := range strings.Split(string(b), "\n") {
		for name, to := range map[string]*uint64{"VmHWM:": &m.hwm, "RssAnon:": &m.anon} {
			if v, ok := strings.CutPrefix(l, name); ok {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err == nil {
					*to = kb
					found++
				}
			}
		}
	}
	if found != 2 {
		return m, false
	}
	// PSS, from the rollup of the process's mappings.
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Pss:"); ok {
				m.pss, _ = strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
	}
	return m, true
}

// counts reads -parallel's list of N.
func counts(list string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-parallel %q: %q is not a count of runs", list, f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}
