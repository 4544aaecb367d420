// Package collector runs the OpenTelemetry Collector's own OTLP receiver
// (go.opentelemetry.io/collector/receiver/otlpreceiver) on loopback for
// tests: a real decoder of what an exporter sends, not one of ours, with
// every byte the exporter sent kept for a secret scan; and the two
// collectors that fail: one that is down, one that never answers.
package collector

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// The protocols a Collector receives, as OTEL_EXPORTER_OTLP_PROTOCOL
// names them.
const (
	HTTP = "http/protobuf"
	GRPC = "grpc"
)

// Collector is a running OTLP receiver behind a byte-recording relay.
type Collector struct {
	// Endpoint is the base URL an exporter is given (http://127.0.0.1:PORT).
	Endpoint string

	recv  receiver.Traces
	relay *relay

	mu     sync.Mutex
	traces []ptrace.Traces
	heard  chan struct{}
}

// Start runs a receiver of protocol on loopback until Stop.
func Start(protocol string) (*Collector, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	inner := fmt.Sprintf("127.0.0.1:%d", port)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	switch protocol {
	case HTTP:
		cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = inner
	case GRPC:
		cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = inner
	default:
		return nil, fmt.Errorf("collector: no protocol %q", protocol)
	}
	c := &Collector{heard: make(chan struct{}, 1)}
	next, err := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		c.mu.Lock()
		c.traces = append(c.traces, td)
		c.mu.Unlock()
		select {
		case c.heard <- struct{}{}:
		default:
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	set := receiver.Settings{ID: component.NewID(f.Type()), BuildInfo: component.NewDefaultBuildInfo(),
		TelemetrySettings: component.TelemetrySettings{Logger: zap.NewNop(), TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}}
	if c.recv, err = f.CreateTraces(context.Background(), set, cfg, next); err != nil {
		return nil, err
	}
	if err := c.recv.Start(context.Background(), host{}); err != nil {
		return nil, err
	}
	if c.relay, err = newRelay(inner); err != nil {
		_ = c.recv.Shutdown(context.Background())
		return nil, err
	}
	c.Endpoint = "http://" + c.relay.ln.Addr().String()
	return c, nil
}

// Stop shuts the receiver and the relay down.
func (c *Collector) Stop() {
	c.relay.close()
	_ = c.recv.Shutdown(context.Background())
}

// Spans are every span received so far, in the order they came.
func (c *Collector) Spans() []ptrace.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ptrace.Span
	for _, td := range c.traces {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					out = append(out, ss.Spans().At(k))
				}
			}
		}
	}
	return out
}

// Resources are the resource attributes of every batch received, each as
// a map of strings.
func (c *Collector) Resources() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, td := range c.traces {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			out = append(out, td.ResourceSpans().At(i).Resource().Attributes().AsRaw())
		}
	}
	return out
}

// Wait waits at most d for n spans in all.
func (c *Collector) Wait(n int, d time.Duration) bool {
	deadline := time.After(d)
	for len(c.Spans()) < n {
		select {
		case <-c.heard:
		case <-deadline:
			return false
		}
	}
	return true
}

// Sent is every byte the exporters sent the collector, as sent.
func (c *Collector) Sent() []byte { return c.relay.sent() }

type host struct{}

func (host) GetExtensions() map[component.ID]component.Component { return nil }

// Down is the endpoint of a collector that is not there: a loopback port
// nothing listens on.
func Down() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port), nil
}

// Silent is a collector that takes connections and never answers, until
// its Close.
type Silent struct {
	Endpoint string
	ln       net.Listener
	mu       sync.Mutex
	conns    []net.Conn
}

// StartSilent listens on loopback and holds every connection open unread.
func StartSilent() (*Silent, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Silent{Endpoint: "http://" + ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// Close lets every held connection go.
func (s *Silent) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// relay forwards connections to the receiver and keeps what the clients
// sent.
type relay struct {
	ln  net.Listener
	to  string
	mu  sync.Mutex
	buf bytes.Buffer
	wg  sync.WaitGroup
}

func newRelay(to string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, to: to}
	go r.serve()
	return r, nil
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer c.Close()
			up, err := dialRetry(r.to)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
			_, _ = io.Copy(io.MultiWriter(up, r), c)
		}()
	}
}

// dialRetry dials the receiver, which may still be binding its port.
func dialRetry(addr string) (net.Conn, error) {
	var err error
	for range 50 {
		var c net.Conn
		if c, err = net.Dial("tcp", addr); err == nil {
			return c, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

func (r *relay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *relay) sent() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

func (r *relay) close() { _ = r.ln.Close() }
