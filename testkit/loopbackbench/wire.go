package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/testkit/benchupstream"
)

// The wire view's cost: the proxy without a view, a second one alike (a
// control, whose difference from the first is the noise of the host), and
// one with the view, side by side on a model turn as each API streams it
// (first byte, whole turn, a small JSON request) and on a long stream
// (throughput, and the proxy's own CPU time per MiB, which the host's load
// disturbs far less than a wall clock does).

// wireSet is the proxies of the wire phase, served by one process.
var wireSet = []struct{ name, api string }{
	{"off", ""}, {"control", ""}, {"on-" + loopback.AnthropicMessages, loopback.AnthropicMessages}, {"on-" + loopback.OpenAIResponses, loopback.OpenAIResponses},
}

// wireSide is one proxy's samples for one dialect.
type wireSide struct {
	t                 *target
	ttfb, turn, small []time.Duration
	rates             []float64
	cpu               time.Duration // the proxy's CPU time over its long streams
	bytes             int64         // and their length
}

type wireDialect struct {
	api, turnPath, longPath string
	off, control, on        *wireSide
}

// timed sends one request to path and reads the whole answer: the time
// to its first byte, to its end, and its length.
func (t *target) timed(c *http.Client, path string) (first, total time.Duration, n int64, err error) {
	req, _ := http.NewRequest(http.MethodPost, t.base+path, strings.NewReader(smallBody))
	req.Header = t.header.Clone()
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		return 0, 0, 0, err
	}
	first = time.Since(start)
	n, err = io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return first, time.Since(start), n + 1, err
}

// cpuTime is a process's CPU time so far, summed over its threads, from
// their schedstat (nanoseconds; /proc/PID/stat counts in 10 ms ticks).
func cpuTime(pid int) time.Duration {
	dirs, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	var total time.Duration
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}

// sample takes one request's sample on one side.
func (s *wireSide) sample(c *http.Client, d *wireDialect, kind string) error {
	switch kind {
	case "turn":
		first, total, _, err := s.t.timed(c, d.turnPath)
		if err != nil {
			return fmt.Errorf("%s turn: %w", s.t.name, err)
		}
		s.ttfb, s.turn = append(s.ttfb, first), append(s.turn, total)
	case "small":
		d, err := s.t.do(c, "/small")
		if err != nil {
			return fmt.Errorf("%s small: %w", s.t.name, err)
		}
		s.small = append(s.small, d)
	case "long":
		before := cpuTime(s.t.child.Process.Pid)
		_, total, n, err := s.t.timed(c, d.longPath)
		if err != nil {
			return fmt.Errorf("%s long: %w", s.t.name, err)
		}
		s.cpu += cpuTime(s.t.child.Process.Pid) - before
		s.bytes += n
		s.rates = append(s.rates, float64(n)/total.Seconds())
	}
	return nil
}

func (s *wireSide) reset() {
	s.ttfb, s.turn, s.small, s.rates, s.cpu, s.bytes = nil, nil, nil, nil, 0, 0
}

// wireBench measures each dialect's three sides request by request in
// turn (the order rotating), so that the host's load, which moves from
// one moment to the next on a shared machine, falls on all three alike;
// and reports.
func wireBench(w io.Writer, c *http.Client, set []*target, rounds, nTurn, nLong, nSmall int) error {
	off, control := set[0], set[1]
	on := map[string]*target{loopback.AnthropicMessages: set[2], loopback.OpenAIResponses: set[3]}
	ds := []*wireDialect{
		{api: loopback.AnthropicMessages, turnPath: benchupstream.AnthropicTurn, longPath: benchupstream.AnthropicLong},
		{api: loopback.OpenAIResponses, turnPath: benchupstream.OpenAITurn, longPath: benchupstream.OpenAILong},
	}
	each := func(d *wireDialect, kind string, n int) error {
		sides := []*wireSide{d.off, d.control, d.on}
		for i := range n {
			for j := range sides {
				if err := sides[(i+j)%3].sample(c, d, kind); err != nil {
					return err
				}
			}
		}
		return nil
	}
	kinds := []struct {
		kind string
		n    int
	}{{"turn", nTurn}, {"small", nSmall}, {"long", nLong}}
	for _, d := range ds {
		d.off, d.control, d.on = &wireSide{t: off}, &wireSide{t: control}, &wireSide{t: on[d.api]}
		for _, k := range kinds { // warm up
			if err := each(d, k.kind, 3); err != nil {
				return err
			}
		}
		d.off.reset()
		d.control.reset()
		d.on.reset()
	}
	for range rounds {
		for _, d := range ds {
			for _, k := range kinds {
				if err := each(d, k.kind, k.n); err != nil {
					return err
				}
			}
		}
	}
	wireReport(w, ds, rounds)
	return nil
}

// pairedRatio is the median of the ratios on[i]/off[i] of samples taken
// one right after the other.
func pairedRatio(on, off []float64) float64 {
	r := make([]float64, 0, len(on))
	for i := range min(len(on), len(off)) {
		r = append(r, on[i]/off[i])
	}
	return median(r)
}

func (s *wireSide) cpuPerMiB() float64 { return float64(s.cpu) / (float64(s.bytes) / (1 << 20)) }

func wireReport(w io.Writer, ds []*wireDialect, rounds int) {
	a := ds[0]
	fmt.Fprintf(w, "\nwire view: the proxy without it (off), a second one alike (control: the host's noise), and with it (on), request by request, %d rounds:\n"+
		"%d turns (%d text deltas and a tool call), %d small requests, %d long streams (%d deltas) per side and dialect\n",
		rounds, len(a.off.turn), benchupstream.TurnDeltas, len(a.off.small), len(a.off.rates), benchupstream.LongDeltas)
	us2 := func(d time.Duration) string { return us(d) }
	for _, d := range ds {
		fmt.Fprintf(w, "\n%-26s %12s %12s %12s %10s %10s\n", d.api, "off", "control", "on", "control/off", "on/off")
		row := func(name string, f func(*wireSide) float64, show func(float64) string) {
			off := f(d.off)
			fmt.Fprintf(w, "%-26s %12s %12s %12s %10.3fx %9.3fx\n", name, show(off), show(f(d.control)), show(f(d.on)), f(d.control)/off, f(d.on)/off)
		}
		dur := func(v float64) string { return us2(time.Duration(v)) }
		p := func(get func(*wireSide) []time.Duration, q float64) func(*wireSide) float64 {
			return func(s *wireSide) float64 { return float64(pct(get(s), q)) }
		}
		ttfb := func(s *wireSide) []time.Duration { return s.ttfb }
		turn := func(s *wireSide) []time.Duration { return s.turn }
		small := func(s *wireSide) []time.Duration { return s.small }
		row("SSE first byte p50", p(ttfb, .5), dur)
		row("SSE first byte p99", p(ttfb, .99), dur)
		row("turn p50", p(turn, .5), dur)
		row("turn p99", p(turn, .99), dur)
		row("small p50", p(small, .5), dur)
		row("small p99", p(small, .99), dur)
		row("long stream throughput", func(s *wireSide) float64 { return median(s.rates) }, func(v float64) string { return fmt.Sprintf("%.0f MiB/s", v/(1<<20)) })
		row("proxy CPU per MiB", (*wireSide).cpuPerMiB, dur)
		fmt.Fprintf(w, "%-26s %12s %12s %12s %10.3fx %9.3fx\n", "throughput, paired", "", "", "",
			pairedRatio(d.control.rates, d.off.rates), pairedRatio(d.on.rates, d.off.rates))
	}
	yes := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintln(w)
	for _, d := range ds {
		cpu := d.on.cpuPerMiB() / d.off.cpuPerMiB()
		thr := pairedRatio(d.on.rates, d.off.rates)
		added := max(pct(d.on.turn, .99)-pct(d.off.turn, .99), pct(d.on.ttfb, .99)-pct(d.off.ttfb, .99), pct(d.on.small, .99)-pct(d.off.small, .99))
		noise := max(pct(d.control.turn, .99)-pct(d.off.turn, .99), pct(d.control.ttfb, .99)-pct(d.off.ttfb, .99), pct(d.control.small, .99)-pct(d.off.small, .99))
		fmt.Fprintf(w, "aim (%s): the view costs at most 5%% of throughput: %s (proxy CPU per MiB %.3fx; wall throughput %.3fx paired, control %.3fx)\n",
			d.api, yes(cpu <= 1.05), cpu, thr, pairedRatio(d.control.rates, d.off.rates))
		fmt.Fprintf(w, "aim (%s): added p99 at most 0.2 ms: %s (%s, the largest of turn, first byte and small; the control's: %s)\n",
			d.api, yes(added <= 200*time.Microsecond), us(added), us(noise))
	}
}
