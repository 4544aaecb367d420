// Command loopbackbench measures the loopback proxy side by side, in one run,
// against the same upstream reached directly, through a bare TCP relay (one
// io.Copy each way: the floor for any relay in a process of its own) and
// through a plain httputil.ReverseProxy (full duplex on, see serveProxy),
// and prints the ratios: added p50/p99 latency for
// small requests, SSE time to first byte, throughput of a 10 MiB streamed
// body, and each proxy's peak RSS (each proxy runs in its own process so
// that its peak is its own). Targets are measured in interleaved rounds so
// that machine noise falls on all three alike. Then the wire view's cost
// (wire.go): the proxy without and with a view, on each API's model
// streams. Run it with scripts/bench-loopback; it sends nothing off
// 127.0.0.1.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/testkit/benchupstream"
)

const (
	smallBody  = `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"a small request of a couple of hundred bytes, like a short turn"}]}`
	tokenEnv   = "LOOPBENCH_TOKEN"
	benchToken = "sk-bench-not-a-real-key"
)

func main() {
	serve := flag.String("serve", "", "internal: serve one proxy (loopback, httputil or tcprelay) in front of -upstream")
	upstream := flag.String("upstream", "", "internal: the upstream for -serve")
	rounds := flag.Int("rounds", 10, "interleaved rounds")
	small := flag.Int("small", 300, "small requests per target per round")
	sse := flag.Int("sse", 60, "SSE first-byte samples per target per round")
	big := flag.Int("big", 2, "10 MiB streams per target per round")
	turns := flag.Int("turns", 40, "wire view: model turns per side, dialect and round")
	long := flag.Int("long", 2, "wire view: long model streams per side, dialect and round")
	wireSmall := flag.Int("wire-small", 100, "wire view: small requests per side, dialect and round")
	flag.Parse()
	if *serve != "" {
		if err := serveProxy(*serve, *upstream); err != nil {
			fmt.Fprintln(os.Stderr, "loopbackbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, *small, *sse, *big, *turns, *long, *wireSmall); err != nil {
		fmt.Fprintln(os.Stderr, "loopbackbench:", err)
		os.Exit(1)
	}
}

// target is one way to reach the upstream.
type target struct {
	name   string
	base   string
	header http.Header
	child  *exec.Cmd
	stdin  io.WriteCloser
	small  []time.Duration
	ttfb   []time.Duration
	rates  []float64 // bytes per second
}

func run(rounds, nSmall, nSSE, nBig, nTurn, nLong, nWireSmall int) error {
	up, err := startUpstream()
	if err != nil {
		return err
	}
	direct := &target{name: "direct", base: up, header: http.Header{"X-Api-Key": {benchToken}}}
	targets := []*target{direct}
	defer func() {
		for _, t := range targets[1:] {
			_ = t.stdin.Close()
			_ = t.child.Wait()
		}
	}()
	for _, kind := range []string{"tcprelay", "httputil", "loopback"} {
		t, err := spawn(kind, up)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, DisableCompression: true}}

	// Warm every path once before measuring.
	for _, t := range targets {
		for i := 0; i < 50; i++ {
			if _, err := t.do(client, "/small"); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	for r := 0; r < rounds; r++ {
		for _, t := range targets {
			for i := 0; i < nSmall; i++ {
				d, err := t.do(client, "/small")
				if err != nil {
					return fmt.Errorf("%s small: %w", t.name, err)
				}
				t.small = append(t.small, d)
			}
			for i := 0; i < nSSE; i++ {
				d, err := t.firstByte(client)
				if err != nil {
					return fmt.Errorf("%s sse: %w", t.name, err)
				}
				t.ttfb = append(t.ttfb, d)
			}
			for i := 0; i < nBig; i++ {
				d, err := t.do(client, "/big")
				if err != nil {
					return fmt.Errorf("%s big: %w", t.name, err)
				}
				t.rates = append(t.rates, benchupstream.BigSize/d.Seconds())
			}
		}
	}
	report(os.Stdout, targets, rounds*nSmall)
	set, err := spawnSet("wire-set", up)
	if err != nil {
		return err
	}
	defer func() {
		_ = set[0].stdin.Close()
		_ = set[0].child.Wait()
	}()
	if err := wireBench(os.Stdout, client, set, rounds, nTurn, nLong, nWireSmall); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "peak RSS of the process serving the four: %.1f MiB (the plain loopback's alone: %.1f MiB)\n", rssMiB(set[0]), rssMiB(targets[3]))
	return nil
}

func rssMiB(t *target) float64 {
	n, _ := peakRSS(t.child.Process.Pid)
	return float64(n) / (1 << 20)
}

// do sends one request and reads the whole answer.
func (t *target) do(c *http.Client, path string) (time.Duration, error) {
	req, _ := http.NewRequest(http.MethodPost, t.base+path, strings.NewReader(smallBody))
	req.Header = t.header.Clone()
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), err
}

// firstByte times an SSE request up to its first body byte.
func (t *target) firstByte(c *http.Client) (time.Duration, error) {
	req, _ := http.NewRequest(http.MethodPost, t.base+"/sse", strings.NewReader(smallBody))
	req.Header = t.header.Clone()
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		return 0, err
	}
	d := time.Since(start)
	_, err = io.Copy(io.Discard, resp.Body)
	return d, err
}

// startUpstream serves benchupstream's paths on 127.0.0.1, in this process.
func startUpstream() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, benchupstream.Handler()) }()
	return "http://" + ln.Addr().String(), nil
}

// spawn starts this program again as one proxy and reads its address.
func spawn(kind, upstream string) (*target, error) {
	ts, err := spawnSet(kind, upstream)
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// spawnSet starts this program again as one or more proxies (the wire
// set: several in one process) and reads their addresses.
func spawnSet(kind, upstream string) ([]*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", kind, "-upstream", upstream)
	cmd.Env = append(os.Environ(), tokenEnv+"="+benchToken)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe() // held in the target: the child serves until it closes
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var started []served
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &started)
	}
	if err == nil && len(started) == 0 {
		err = fmt.Errorf("no address in %q", line)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("starting the %s proxy: %w", kind, err)
	}
	var ts []*target
	for _, s := range started {
		h := http.Header{"X-Api-Key": {benchToken}}
		if s.Placeholder != "" {
			h = http.Header{"X-Api-Key": {s.Placeholder}}
		}
		ts = append(ts, &target{name: s.Name, base: s.Base, header: h, child: cmd, stdin: in})
	}
	return ts, nil
}

// served is one proxy a child serves.
type served struct {
	Name        string `json:"name"`
	Base        string `json:"base"`
	Placeholder string `json:"placeholder"`
}

// startLoopback starts one loopback proxy, reading api's wire when set.
func startLoopback(upstream, api string) (*loopback.Proxy, error) {
	p, err := loopback.New(loopback.Config{Upstream: upstream, Token: loopback.TokenSource{Env: tokenEnv}, RunID: "bench", ModelAPI: api})
	if err != nil {
		return nil, err
	}
	return p, p.Start()
}

// serveProxy is the child: one proxy on 127.0.0.1 (or the wire set) until
// stdin closes.
func serveProxy(kind, upstream string) error {
	var base, placeholder string
	switch kind {
	case "loopback":
		p, err := startLoopback(upstream, "")
		if err != nil {
			return err
		}
		defer p.Close()
		base, placeholder = p.BaseURL(), p.Placeholder()
	case "wire-set":
		// The wire view's sides in one process, so that no side is the
		// one process the host happens to favour.
		var set []served
		for _, s := range wireSet {
			p, err := startLoopback(upstream, s.api)
			if err != nil {
				return err
			}
			defer p.Close()
			set = append(set, served{Name: s.name, Base: p.BaseURL(), Placeholder: p.Placeholder()})
		}
		if err := json.NewEncoder(os.Stdout).Encode(set); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		return nil
	case "httputil":
		u, ln, err := relayFor(upstream)
		if err != nil {
			return err
		}
		// Full duplex on: without it httputil cuts, now and then, an SSE
		// answer that starts while the request body is still being written
		// ("use of closed network connection"), and the run fails.
		rp := httputil.NewSingleHostReverseProxy(u)
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = http.NewResponseController(w).EnableFullDuplex()
				rp.ServeHTTP(w, r)
			}))
		}()
		base = "http://" + ln.Addr().String()
	case "tcprelay":
		u, ln, err := relayFor(upstream)
		if err != nil {
			return err
		}
		go relay(ln, u.Host)
		base = "http://" + ln.Addr().String()
	default:
		return fmt.Errorf("unknown proxy %q", kind)
	}
	if err := json.NewEncoder(os.Stdout).Encode([]served{{Name: kind, Base: base, Placeholder: placeholder}}); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// relay copies each accepted connection to and from a fresh one to
// upstream, byte for byte: no parsing, no header rewrite.
func relay(ln net.Listener, upstream string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer u.Close()
			go func() {
				_, _ = io.Copy(u, c)
				_ = u.(*net.TCPConn).CloseWrite()
			}()
			_, _ = io.Copy(c, u)
		}()
	}
}

// peakRSS is a process's high-water resident set, from /proc.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for process %d", pid)
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/1e3) }

func report(w io.Writer, ts []*target, nSmall int) {
	direct, relay, rp, lb := ts[0], ts[1], ts[2], ts[3]
	fmt.Fprintf(w, "loopback benchmark: %d small requests, %d SSE first bytes, %d 10 MiB streams per target, interleaved (GOMAXPROCS %d)\n\n",
		nSmall, len(direct.ttfb), len(direct.rates), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "%-24s %14s %14s %14s %14s\n", "", "direct", "tcp relay", "httputil", "loopback")
	row := func(name string, f func(*target) string) {
		fmt.Fprintf(w, "%-24s %14s %14s %14s %14s\n", name, f(direct), f(relay), f(rp), f(lb))
	}
	row("small p50", func(t *target) string { return us(pct(t.small, .50)) })
	row("small p99", func(t *target) string { return us(pct(t.small, .99)) })
	row("SSE first byte p50", func(t *target) string { return us(pct(t.ttfb, .50)) })
	row("SSE first byte p99", func(t *target) string { return us(pct(t.ttfb, .99)) })
	row("10 MiB throughput", func(t *target) string { return fmt.Sprintf("%.0f MiB/s", median(t.rates)/(1<<20)) })
	rss := map[*target]int64{}
	for _, t := range ts[1:] {
		rss[t], _ = peakRSS(t.child.Process.Pid)
	}
	row("proxy peak RSS", func(t *target) string {
		if t.child == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f MiB", float64(rss[t])/(1<<20))
	})

	added := func(t *target, p float64) time.Duration { return pct(t.small, p) - pct(direct.small, p) }
	ratio := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	fmt.Fprintf(w, "\nadded over direct\n")
	fmt.Fprintf(w, "%-24s %14s %14s %14s %14s\n", "  small p50", "-", us(added(relay, .50)), us(added(rp, .50)), us(added(lb, .50)))
	fmt.Fprintf(w, "%-24s %14s %14s %14s %14s\n", "  small p99", "-", us(added(relay, .99)), us(added(rp, .99)), us(added(lb, .99)))
	fmt.Fprintf(w, "%-24s %14s %14s %14s %14s\n", "  SSE first byte p50", "-", us(pct(relay.ttfb, .5)-pct(direct.ttfb, .5)),
		us(pct(rp.ttfb, .5)-pct(direct.ttfb, .5)), us(pct(lb.ttfb, .5)-pct(direct.ttfb, .5)))

	fmt.Fprintln(w, "\nratios, loopback against each")
	fmt.Fprintf(w, "  vs direct:   small p50 %s, p99 %s, SSE first byte %s, throughput %s\n",
		ratio(float64(pct(lb.small, .5)), float64(pct(direct.small, .5))), ratio(float64(pct(lb.small, .99)), float64(pct(direct.small, .99))),
		ratio(float64(pct(lb.ttfb, .5)), float64(pct(direct.ttfb, .5))), ratio(median(lb.rates), median(direct.rates)))
	fmt.Fprintf(w, "  vs httputil: added p50 %s, added p99 %s, SSE first byte %s, throughput %s, peak RSS %s\n",
		ratio(float64(added(lb, .5)), float64(added(rp, .5))), ratio(float64(added(lb, .99)), float64(added(rp, .99))),
		ratio(float64(pct(lb.ttfb, .5)), float64(pct(rp.ttfb, .5))), ratio(median(lb.rates), median(rp.rates)),
		ratio(float64(rss[lb]), float64(rss[rp])))
	fmt.Fprintf(w, "  vs tcp relay: throughput %s, SSE first byte %s\n",
		ratio(median(lb.rates), median(relay.rates)), ratio(float64(pct(lb.ttfb, .5)), float64(pct(relay.ttfb, .5))))

	yes := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "\naim: added p99 under 1 ms: %s (%s); throughput at least 0.9x the bare tcp relay: %s (%s)\n",
		yes(added(lb, .99) < time.Millisecond), us(added(lb, .99)),
		yes(median(lb.rates) >= 0.9*median(relay.rates)), ratio(median(lb.rates), median(relay.rates)))
}

// relayFor is the upstream a baseline proxy relays to, and a loopback
// listener for its clients.
func relayFor(upstream string) (*url.URL, net.Listener, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	return u, ln, nil
}
