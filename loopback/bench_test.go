package loopback

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/loopback/internal/benchup"
)

// The Go benchmarks run the three ways to the same upstream side by side
// (direct, a plain httputil.ReverseProxy, this proxy), in one process; `go
// test -bench . ./loopback/` prints them next to each other. The ratios
// with each proxy in its own process, and peak RSS, come from
// scripts/bench-loopback.

const benchBig = benchup.BigSize

func benchUpstream(b *testing.B) *httptest.Server {
	up := httptest.NewServer(benchup.Handler())
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
