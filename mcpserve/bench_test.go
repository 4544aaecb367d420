package mcpserve

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The benchmarks measure mcp-serve side by side with the smallest mcp-go
// server that has one file-reading tool (testkit/mcpbaseline), in the same
// run and interleaved, and report each plus their ratio;
// scripts/bench-mcpserve prints the ratios.

// benchServers returns makers of the two server processes: mcp-serve with a
// one-entry contract, then the baseline, both over one workspace holding a
// 4 KiB file.
func benchServers(b *testing.B) [2]func() *exec.Cmd {
	b.Helper()
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "4k.txt"), bytes.Repeat([]byte("0123456789abcde\n"), 256), 0o644); err != nil {
		b.Fatal(err)
	}
	contract := filepath.Join(b.TempDir(), "tools.yaml")
	if err := os.WriteFile(contract, []byte("format: metaharness.tool-contract/1\nentries:\n  - {name: fs.read, summary: Read a file., input: {type: object, properties: {path: {type: string}}, required: [path]}, renderings: {mcp: read_file}}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	mh := metaharnessBinary(b)
	base := built(b, "github.com/metaharness/metaharness/testkit/mcpbaseline")
	return [2]func() *exec.Cmd{
		func() *exec.Cmd {
			cmd := exec.Command(mh, "mcp-serve", "--catalogue", contract, "--workspace", ws)
			cmd.Env = append(os.Environ(), "METAHARNESS_DECISIONS_SOCKET=")
			return cmd
		},
		func() *exec.Cmd {
			cmd := exec.Command(base)
			cmd.Dir = ws
			return cmd
		},
	}
}

// start runs a server and returns a client on its stdio, and its stop.
func start(b *testing.B, cmd *exec.Cmd) (*rpc, func()) {
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return newRPC(b, in, out), func() {
		in.Close()
		_, _ = io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			b.Errorf("%s: %v", cmd.Path, err)
		}
	}
}

// BenchmarkMCPServeStartToInitialize: from starting the process to the
// answer to initialize.
func BenchmarkMCPServeStartToInitialize(b *testing.B) {
	servers := benchServers(b)
	var took [2]time.Duration
	for b.Loop() {
		for i, mk := range servers {
			t0 := time.Now()
			c, stop := start(b, mk())
			c.initialize()
			took[i] += time.Since(t0)
			stop()
		}
	}
	report(b, took)
}

// BenchmarkMCPServeReadCall: one tools/call reading a 4 KiB file, on a
// session already initialized.
func BenchmarkMCPServeReadCall(b *testing.B) {
	servers := benchServers(b)
	var clients [2]*rpc
	for i, mk := range servers {
		c, stop := start(b, mk())
		defer stop()
		c.initialize()
		clients[i] = c
	}
	var took [2]time.Duration
	for b.Loop() {
		for i, c := range clients {
			t0 := time.Now()
			out := c.raw("tools/call", `{"name":"read_file","arguments":{"path":"4k.txt"}}`)
			took[i] += time.Since(t0)
			if !strings.Contains(string(out), "0123456789abcde") || strings.Contains(string(out), `"isError":true`) {
				b.Fatalf("server %d: %s", i, out)
			}
		}
	}
	report(b, took)
}

// report states each server's time per operation and their ratio.
func report(b *testing.B, took [2]time.Duration) {
	n := float64(b.N)
	mh, base := float64(took[0].Nanoseconds())/n, float64(took[1].Nanoseconds())/n
	b.ReportMetric(0, "ns/op") // the pair's total says nothing; the metrics below do
	b.ReportMetric(mh, "mcp-serve-ns/op")
	b.ReportMetric(base, "mcp-go-minimal-ns/op")
	b.ReportMetric(mh/base, "ratio")
}
