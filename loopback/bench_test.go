package loopback

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/testkit/benchupstream"
)

// The Go benchmarks run the three ways to the same upstream side by side
// (direct, a plain httputil.ReverseProxy, this proxy), in one process; `go
// test -bench . ./loopback/` prints them next to each other. The ratios
// with each proxy in its own process, and peak RSS, come from
// scripts/bench-loopback.

const benchBig = benchupstream.BigSize

func benchUpstream(b *testing.B) *httptest.Server {
	up := httptest.NewServer(benchupstream.Handler())
	b.Cleanup(up.Close)
	return up
}

type benchTarget struct {
	name string
	base string
	key  string
}

// benchTargets: the upstream directly, through httputil.ReverseProxy (full
// duplex on, without which it cuts SSE answers whose request body is still
// being written), and through this proxy.
func benchTargets(b *testing.B) []benchTarget {
	up := benchUpstream(b)
	u, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(rps.Close)
	p := start(b, up.URL, nil)
	return []benchTarget{{"direct", up.URL, realToken}, {"httputil", rps.URL, realToken}, {"loopback", p.BaseURL(), p.Placeholder()}}
}

func (t benchTarget) post(b *testing.B, c *http.Client, path string) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, t.base+path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Api-Key", t.key)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return resp
}

func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// BenchmarkSmall: one small request and answer.
func BenchmarkSmall(b *testing.B) {
	for _, t := range benchTargets(b) {
		b.Run(t.name, func(b *testing.B) {
			c := benchClient(b)
			for b.Loop() {
				resp := t.post(b, c, "/small")
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkSSEFirstByte: time to the first byte of a streamed answer
// (reported as ttfb-ns; ns/op is the whole request).
func BenchmarkSSEFirstByte(b *testing.B) {
	for _, t := range benchTargets(b) {
		b.Run(t.name, func(b *testing.B) {
			c := benchClient(b)
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				resp := t.post(b, c, "/sse")
				var one [1]byte
				if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ttfb-ns")
		})
	}
}

// BenchmarkStream10MiB: throughput of a 10 MiB streamed answer.
func BenchmarkStream10MiB(b *testing.B) {
	for _, t := range benchTargets(b) {
		b.Run(t.name, func(b *testing.B) {
			c := benchClient(b)
			b.SetBytes(benchBig)
			for b.Loop() {
				resp := t.post(b, c, "/big")
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != benchBig {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}

// wireStreams are the model streams the wire benchmarks read, by dialect.
var wireStreams = []struct{ api, turn, long string }{
	{AnthropicMessages, benchupstream.AnthropicTurn, benchupstream.AnthropicLong},
	{OpenAIResponses, benchupstream.OpenAITurn, benchupstream.OpenAILong},
}

// BenchmarkWireParse: what reads a long model stream beside the relay, in
// the 4 KiB chunks a TLS connection hands over: without a view the quota
// sniffer, with one the view alone (it reads the error events in the
// sniffer's place).
func BenchmarkWireParse(b *testing.B) {
	up := benchUpstream(b)
	for _, s := range wireStreams {
		resp, err := http.Post(up.URL+s.long, "application/json", strings.NewReader("{}"))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		chunks := func(f func([]byte)) {
			for i := 0; i < len(body); i += 4 << 10 {
				f(body[i:min(i+4<<10, len(body))])
			}
		}
		b.Run(s.api+"/sniffer", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				sn := newSniffer(resp)
				chunks(sn.write)
				sn.quota(200, resp.Header)
			}
		})
		b.Run(s.api+"/view", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				w := newWire(s.api, DefaultWireLimit)
				ws := w.begin(1, time.Time{}, "POST", "/", &http.Response{StatusCode: 200, Header: resp.Header, ContentLength: -1})
				chunks(func(c []byte) {
					ws.relay(len(c))
					ws.write(c)
				})
				ws.end(true)
			}
		})
	}
}

// BenchmarkWireViewTime: the view's own time on the relay path, which is
// all it can add to a client's latency (it reads each chunk after the
// chunk is relayed, before the next is read): per model turn (the whole
// response read, in the 4 KiB chunks a connection hands over) and per
// chunk of a long stream, each as its 99th percentile over every
// iteration, measured in one process, where the host's noise between
// processes does not reach it (scripts/bench prints it against the 0.2 ms
// aim).
func BenchmarkWireViewTime(b *testing.B) {
	up := benchUpstream(b)
	for _, s := range wireStreams {
		for _, what := range []struct {
			name, path string
			perChunk   bool
		}{{"turn", s.turn, false}, {"long-chunk", s.long, true}} {
			resp, err := http.Post(up.URL+what.path, "application/json", strings.NewReader("{}"))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			b.Run(s.api+"/"+what.name, func(b *testing.B) {
				var took []time.Duration
				for b.Loop() {
					w := newWire(s.api, DefaultWireLimit)
					ws := w.begin(1, time.Time{}, "POST", "/", &http.Response{StatusCode: 200, Header: resp.Header, ContentLength: -1})
					var sum time.Duration
					for i := 0; i < len(body); i += 4 << 10 {
						c := body[i:min(i+4<<10, len(body))]
						start := time.Now()
						ws.relay(len(c))
						ws.write(c)
						d := time.Since(start)
						if what.perChunk {
							took = append(took, d)
						}
						sum += d
					}
					start := time.Now()
					ws.end(true)
					sum += time.Since(start)
					if !what.perChunk {
						took = append(took, sum)
					}
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}

// wirePair is this proxy without and with the wire view, for one dialect,
// in front of the same upstream.
func wirePair(b *testing.B, api string) []benchTarget {
	up := benchUpstream(b)
	off := start(b, up.URL, nil)
	// A bound the iterations cannot reach: past it the view holds
	// nothing more, and would cost less than it does in a run.
	on := start(b, up.URL, func(c *Config) { c.ModelAPI, c.WireLimit = api, 1<<40 })
	return []benchTarget{{"view-off", off.BaseURL(), off.Placeholder()}, {"view-on", on.BaseURL(), on.Placeholder()}}
}

// BenchmarkWireStream: a long model stream through the proxy, the wire
// view off and on taken in turn in each iteration, so that the host's load
// falls on both alike: off-MB/s, on-MB/s and their ratio on/off.
func BenchmarkWireStream(b *testing.B) {
	for _, s := range wireStreams {
		pair := wirePair(b, s.api)
		b.Run(s.api, func(b *testing.B) {
			c := benchClient(b)
			var took [2]time.Duration
			var n int64
			for i := 0; b.Loop(); i++ {
				for j := range 2 {
					t := pair[(i+j)%2]
					start := time.Now()
					resp := t.post(b, c, s.long)
					m, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil {
						b.Fatal(err)
					}
					took[(i+j)%2] += time.Since(start)
					n = m
				}
			}
			rate := func(d time.Duration) float64 { return float64(n) * float64(b.N) / d.Seconds() / 1e6 }
			b.ReportMetric(rate(took[0]), "off-MB/s")
			b.ReportMetric(rate(took[1]), "on-MB/s")
			b.ReportMetric(rate(took[1])/rate(took[0]), "on/off")
		})
	}
}

// BenchmarkWireTurn: a model turn through the proxy, the view off and on
// in turn: time to the first byte and to the end, each side's mean.
func BenchmarkWireTurn(b *testing.B) {
	for _, s := range wireStreams {
		pair := wirePair(b, s.api)
		b.Run(s.api, func(b *testing.B) {
			c := benchClient(b)
			var first, total [2]time.Duration
			for i := 0; b.Loop(); i++ {
				for j := range 2 {
					k := (i + j) % 2
					start := time.Now()
					resp := pair[k].post(b, c, s.turn)
					var one [1]byte
					if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
						b.Fatal(err)
					}
					first[k] += time.Since(start)
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					total[k] += time.Since(start)
				}
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
			b.ReportMetric(per(first[0]), "off-ttfb-ns")
			b.ReportMetric(per(first[1]), "on-ttfb-ns")
			b.ReportMetric(per(total[0]), "off-turn-ns")
			b.ReportMetric(per(total[1]), "on-turn-ns")
		})
	}
}
