package loopback

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// backstop only fails a test that would otherwise hang; nothing waits on it
// in a passing run.
const backstop = 20 * time.Second

// rig is a proxy in front of handler, with a client of its own. Its close
// shuts all three down explicitly, so that a goleak check deferred before
// it sees only what the proxy left behind.
type rig struct {
	up     *httptest.Server
	p      *Proxy
	client *http.Client
	tr     *http.Transport
}

func newRig(t *testing.T, handler http.HandlerFunc) *rig {
	t.Helper()
	up := httptest.NewServer(handler)
	cfg := Config{Upstream: up.URL, Token: TokenSource{Env: "TOK"}, LookupEnv: lookup(map[string]string{"TOK": realToken})}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	return &rig{up: up, p: p, client: &http.Client{Transport: tr}, tr: tr}
}

func (r *rig) close() {
	r.tr.CloseIdleConnections()
	_ = r.p.Close()
	r.up.Close()
}

func (r *rig) request(ctx context.Context, body io.Reader, size int64) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", r.p.BaseURL()+"/v1/messages", body)
	req.ContentLength = size
	req.Header.Set("x-api-key", r.p.Placeholder())
	return r.client.Do(req)
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(backstop):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestFaultUpstreamResetMidStream: the upstream's connection is reset after
// the first event. The client sees a cut stream (not a clean end), the
// record says upstream-reset, and nothing leaks.
func TestFaultUpstreamResetMidStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	firstRead := make(chan struct{})
	r := newRig(t, func(w http.ResponseWriter, req *http.Request) {
		conn, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		ev := "event: one\ndata: {}\n\n"
		fmt.Fprintf(bw, "%x\r\n%s\r\n", len(ev), ev)
		bw.Flush()
		select {
		case <-firstRead:
		case <-time.After(backstop):
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
	})
	defer r.close()
	resp, err := r.request(context.Background(), strings.NewReader("{}"), 2)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "event: one\n" {
		t.Fatalf("first line %q", line)
	}
	close(firstRead)
	_, err = io.ReadAll(br)
	resp.Body.Close()
	if err == nil {
		t.Fatal("the client saw a clean end of a stream the upstream cut")
	}
	r.tr.CloseIdleConnections()
	_ = r.p.Close()
	rec := r.p.Records()[0]
	if !strings.HasPrefix(rec.Error, ErrUpstreamReset) || rec.Status != 200 || rec.BytesOut == 0 {
		t.Fatalf("record %+v", rec)
	}
	if c := r.p.Counters(); c.UpstreamErrors != 1 {
		t.Fatalf("counters %+v", c)
	}
}

// TestFaultSlowFirstByte: an upstream that waits before answering keeps
// the client waiting, without a timeout, and then answers in full.
func TestFaultSlowFirstByte(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	entered, release := make(chan struct{}), make(chan struct{})
	r := newRig(t, func(w http.ResponseWriter, req *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-time.After(backstop):
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: late\ndata: {}\n\n")
	})
	defer r.close()
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := r.request(context.Background(), strings.NewReader("{}"), 2)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{string(b), err}
	}()
	wait(t, entered, "the upstream to be asked")
	select {
	case res := <-done:
		t.Fatalf("answered before the upstream did: %+v", res)
	default:
	}
	close(release)
	var res result
	select {
	case res = <-done:
	case <-time.After(backstop):
		t.Fatal("no answer after the upstream's first byte")
	}
	if res.err != nil || res.body != "event: late\ndata: {}\n\n" {
		t.Fatalf("%+v", res)
	}
}

// TestFaultClientDisconnects: the client goes away mid-stream; the proxy
// cancels the upstream request, records client-gone, and leaks nothing.
func TestFaultClientDisconnects(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	upstreamCancelled := make(chan struct{})
	r := newRig(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: one\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-req.Context().Done():
			close(upstreamCancelled)
		case <-time.After(backstop):
		}
	})
	defer r.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := r.request(ctx, strings.NewReader("{}"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); line != "event: one\n" {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	wait(t, upstreamCancelled, "the upstream request to be cancelled")
	r.tr.CloseIdleConnections()
	_ = r.p.Close()
	rec := r.p.Records()[0]
	if !strings.HasPrefix(rec.Error, ErrClientGone) {
		t.Fatalf("record %+v", rec)
	}
	if c := r.p.Counters(); c.ClientGone != 1 || c.UpstreamErrors != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestFault200ConcurrentStreams: 200 streams at once each arrive whole,
// each is recorded, and nothing is left running after Close.
func TestFault200ConcurrentStreams(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const streams, events = 200, 10
	r := newRig(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < events; i++ {
			fmt.Fprintf(w, "event: e\ndata: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
	})
	defer r.close()
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := r.request(context.Background(), strings.NewReader("{}"), 2)
			if err != nil {
				errs <- err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if n := strings.Count(string(b), "event: e\n"); err != nil || n != events {
				errs <- fmt.Errorf("stream got %d events, err %v", n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r.tr.CloseIdleConnections()
	_ = r.p.Close()
	if c := r.p.Counters(); c.Forwarded != streams || c.Requests != streams || c.UpstreamErrors != 0 || c.ClientGone != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// repeat is an endless reader of one byte value, for bodies of any size
// that no one holds in memory.
type repeat byte

func (b repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestMemoryBounded: a 64 MiB response and a 32 MiB request go through
// while the whole process allocates a small fraction of either: neither
// body is held whole.
func TestMemoryBounded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const down, upload = 64 << 20, 32 << 20
	chunk := make([]byte, 32<<10)
	r := newRig(t, func(w http.ResponseWriter, req *http.Request) {
		n, _ := io.Copy(io.Discard, req.Body)
		if n > 0 {
			fmt.Fprint(w, n)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		for sent := 0; sent < down; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	defer r.close()

	measure := func(do func()) uint64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		do()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	allocDown := measure(func() {
		resp, err := r.request(context.Background(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != down {
			t.Fatalf("downloaded %d bytes, err %v", n, err)
		}
	})
	allocUp := measure(func() {
		resp, err := r.request(context.Background(), io.LimitReader(repeat('x'), upload), upload)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != strconv.Itoa(upload) {
			t.Fatalf("the upstream received %s bytes", b)
		}
	})
	t.Logf("allocated %d KiB for a %d MiB response, %d KiB for a %d MiB request", allocDown>>10, down>>20, allocUp>>10, upload>>20)
	if allocDown > down/8 || allocUp > upload/4 {
		t.Fatalf("allocated %d bytes for the response, %d for the request: a body was held", allocDown, allocUp)
	}
	_ = r.p.Close()
	if recs := r.p.Records(); recs[0].BytesOut != down || recs[1].BytesIn != upload {
		t.Fatalf("records %+v", recs)
	}
}
