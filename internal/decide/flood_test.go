package decide

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metaharness/metaharness/record"
)

const floodEnv = "DECIDE_FLOOD_SOCKET"

// TestFlood: an agent that opens connection after connection and sends
// endless lines, beside many connections that send nothing, moves the
// serving process's peak RSS by at most 64 MiB, every refusal is heard
// of, and a normal request still gets its answer throughout. The server
// runs in a process of its own (this test binary again), so that what
// is measured is the server alone, with the package's real bounds.
func TestFlood(t *testing.T) {
	if sock := os.Getenv(floodEnv); sock != "" {
		floodServer(sock)
		return
	}
	if testing.Short() {
		t.Skip("a three-second flood")
	}
	sock := filepath.Join(t.TempDir(), "decisions.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlood$")
	cmd.Env = append(os.Environ(), floodEnv+"="+sock)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	field := func(want string) int {
		if !lines.Scan() {
			t.Fatalf("the server said nothing (%v)", lines.Err())
		}
		f := strings.Fields(lines.Text())
		if len(f) < 2 || f[0] != want {
			t.Fatalf("the server said %q, want %s …", lines.Text(), want)
		}
		n, _ := strconv.Atoi(f[1])
		return n
	}
	readyRSS := field("ready")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var idle []net.Conn
	for range 200 {
		if c, err := net.Dial("unix", sock); err == nil {
			idle = append(idle, c)
		}
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var floods atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.Dial("unix", sock)
				if err != nil {
					continue
				}
				floods.Add(1)
				go func() { <-stop; c.Close() }()
				for {
					if _, err := c.Write(chunk); err != nil {
						break
					}
				}
				c.Close()
			}
		}()
	}
	var asked, allowed int
	var denials []string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d, err := Dial(sock).Ask(ctx, small)
		cancel()
		asked++
		switch {
		case err != nil:
			denials = append(denials, err.Error())
		case d.Decision == record.Allow:
			allowed++
		default:
			denials = append(denials, d.Reason)
		}
	}
	close(stop)
	wg.Wait()
	for _, c := range idle {
		c.Close()
	}
	if d := ask(t, sock, small); d.Decision != record.Allow {
		t.Errorf("after the flood: %+v", d)
	}
	stdin.Close()
	hwm, refused := field("done"), 0
	if f := strings.Fields(lines.Text()); len(f) == 3 {
		refused, _ = strconv.Atoi(f[2])
	}
	growth := hwm - readyRSS
	t.Logf("%d flooding connections, 200 idle; %d/%d normal requests allowed; %d refusals heard; peak RSS %d KiB, %d KiB over the %d KiB at ready",
		floods.Load(), allowed, asked, refused, hwm, growth, readyRSS)
	if growth > 64<<10 && !raceDetector {
		t.Errorf("the flood moved the server's peak RSS by %d KiB, past 64 MiB", growth)
	}
	if allowed != asked {
		t.Errorf("%d of %d normal requests did not get their answer: %q", asked-allowed, asked, denials)
	}
	if refused < int(floods.Load()) {
		t.Errorf("%d refusals heard for %d flooding connections", refused, floods.Load())
	}
}

// floodServer is TestFlood's server: it says "ready RSS" when listening,
// serves until its stdin closes, then says "done HWM REFUSED" (KiB).
func floodServer(sock string) {
	ln, err := Listen(sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var refused atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = Serve(ctx, ln, allow, Options{Refused: func(Refusal) { refused.Add(1) }})
	}()
	runtime.GC()
	fmt.Printf("ready %d\n", status("VmRSS"))
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Printf("done %d %d\n", status("VmHWM"), refused.Load())
	cancel()
	<-served
	os.Exit(0)
}

// status reads one KiB figure of /proc/self/status.
func status(key string) int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return -1
}
