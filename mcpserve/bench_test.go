package mcpserve

import (
	"bytes"
	"fmt"
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

// catalogueSizes are the contracts BenchmarkCatalogueSizes serves: one
// entry, a team's hundred, and a thousand.
var catalogueSizes = []int{1, 100, 1000}

// writeCatalogues writes a contract of n entries as a team writes it, in
// YAML, and its scratch copy as a run hands it to the server, JSON; each
// entry a read of the workspace published under its own name, with a schema
// of three described fields.
func writeCatalogues(b *testing.B, n int) (yamlPath, jsonPath string) {
	b.Helper()
	var c strings.Builder
	c.WriteString("format: metaharness.tool-contract/1\nentries:\n")
	for i := range n {
		fmt.Fprintf(&c, "  - name: fs.read\n    summary: Read a file of the team's tree %d, from the workspace root; the path is relative.\n", i)
		c.WriteString("    input:\n      type: object\n      properties:\n")
		c.WriteString("        path: {type: string, description: The file's path beneath the workspace.}\n")
		c.WriteString("        offset: {type: integer, description: The first byte to read, 0 when absent.}\n")
		c.WriteString("        limit: {type: integer, description: At most this many bytes, all when absent.}\n")
		fmt.Fprintf(&c, "      required: [path]\n      additionalProperties: false\n    renderings: {mcp: read_file_%d}\n", i)
	}
	dir := b.TempDir()
	yamlPath = filepath.Join(dir, fmt.Sprintf("tools-%d.yaml", n))
	if err := os.WriteFile(yamlPath, []byte(c.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	contract, err := LoadContract(yamlPath)
	if err != nil {
		b.Fatal(err)
	}
	jsonPath = filepath.Join(dir, fmt.Sprintf("tools-%d.json", n))
	if err := WriteScratchCopy(contract, jsonPath); err != nil {
		b.Fatal(err)
	}
	return yamlPath, jsonPath
}

// BenchmarkCatalogueSizes serves contracts of 1, 100 and 1000 entries side
// by side, interleaved, each as YAML and as a run's JSON scratch copy, and
// times for each from process start to the answer to initialize, one
// tools/list, and one tools/call (a 4 KiB read through the last entry). It
// reports each, the 1000-entry contract's start against the one-entry one,
// and tools/list's time per entry at 1000 against 100;
// scripts/bench-mcpserve prints them.
func BenchmarkCatalogueSizes(b *testing.B) {
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "4k.txt"), bytes.Repeat([]byte("0123456789abcde\n"), 256), 0o644); err != nil {
		b.Fatal(err)
	}
	mh := metaharnessBinary(b)
	formats := []string{"yaml", "json"}
	contracts := make([][2]string, len(catalogueSizes))
	for i, n := range catalogueSizes {
		y, j := writeCatalogues(b, n)
		contracts[i] = [2]string{y, j}
	}
	var toInit [3][2]time.Duration
	var list, call [3]time.Duration
	for b.Loop() {
		for i, n := range catalogueSizes {
			for f := range formats {
				cmd := exec.Command(mh, "mcp-serve", "--catalogue", contracts[i][f], "--workspace", ws)
				cmd.Env = append(os.Environ(), "METAHARNESS_DECISIONS_SOCKET=")
				t0 := time.Now()
				c, stop := start(b, cmd)
				c.initialize()
				t1 := time.Now()
				listed := c.raw("tools/list", `{}`)
				t2 := time.Now()
				out := c.raw("tools/call", fmt.Sprintf(`{"name":"read_file_%d","arguments":{"path":"4k.txt"}}`, n-1))
				t3 := time.Now()
				stop()
				if got := strings.Count(string(listed), `"name":"read_file_`); got != n {
					b.Fatalf("%d entries: tools/list named %d", n, got)
				}
				if !strings.Contains(string(out), "0123456789abcde") || strings.Contains(string(out), `"isError":true`) {
					b.Fatalf("%d entries: %s", n, out)
				}
				toInit[i][f] += t1.Sub(t0)
				list[i] += t2.Sub(t1)
				call[i] += t3.Sub(t2)
			}
		}
	}
	per := func(d time.Duration, runs int) float64 { return float64(d.Nanoseconds()) / float64(b.N*runs) }
	b.ReportMetric(0, "ns/op")
	for i, n := range catalogueSizes {
		for f, format := range formats {
			b.ReportMetric(per(toInit[i][f], 1), fmt.Sprintf("start-%s-%d-ns/op", format, n))
		}
		b.ReportMetric(per(list[i], len(formats)), fmt.Sprintf("list-%d-ns/op", n))
		b.ReportMetric(per(call[i], len(formats)), fmt.Sprintf("call-%d-ns/op", n))
	}
	last := len(catalogueSizes) - 1
	for f, format := range formats {
		b.ReportMetric(per(toInit[last][f], 1)/per(toInit[0][f], 1), "start-"+format+"-ratio")
	}
	perEntry := func(i int) float64 { return per(list[i], len(formats)) / float64(catalogueSizes[i]) }
	b.ReportMetric(perEntry(last)/perEntry(1), "list-per-entry-ratio")
}
