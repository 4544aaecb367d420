package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/record"
)

// slowProbe is a claude whose --version hangs in a grandchild that holds
// its stdout, the way a wedged vendor binary would; it writes the
// grandchild's pid beside itself first.
const slowProbe = `#!/bin/sh
case "$1" in --version)
  sleep 60 &
  echo $! > "$(dirname "$0")/probe.pid"
  wait
  echo "2.1.328 (Claude Code)"; exit 0;;
esac
exit 1
`

// TestStopDuringVersionProbe: SIGTERM, SIGINT or SIGHUP while the vendor's
// --version probe runs before the spawn (--strict-version, whose verdict
// the spawn waits on) is honoured at once: the probe's
// whole process group is killed, the --events stream is closed, the scratch
// tree removed, and metaharness exits 2 with one line, well inside the 4 s
// an embedder is promised, not after the probe's 60 s.
func TestStopDuringVersionProbe(t *testing.T) {
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			home := homeWithClaude(t, slowProbe)
			tmp := t.TempDir()
			events := filepath.Join(home, "events.jsonl")
			cmd := exec.Command(bin, "run", "claude", "--credentials", "none", "--strict-version", "--events", events, "-p", "hi")
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TMPDIR=" + tmp}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pidFile := filepath.Join(home, ".local", "bin", "probe.pid")
			var probe int
			for deadline := time.Now().Add(30 * time.Second); probe == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatal("the --version probe never started")
				}
				if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
					probe, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
				}
			}
			stoppedAt := time.Now()
			_ = cmd.Process.Signal(sig)
			_ = cmd.Wait()
			took := time.Since(stoppedAt)
			if took > 4*time.Second {
				t.Errorf("metaharness took %v to exit after %v, want within 4s", took, sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "metaharness: stopped: the run was stopped (") || !strings.Contains(lines[0], "--version ran, before the vendor was spawned") {
				t.Errorf("stderr %q, want one stopped line", stderr.String())
			}
			if !gone(probe) {
				t.Errorf("the probe's grandchild %d outlived the run", probe)
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "mh-*")); len(left) > 0 {
				t.Errorf("the scratch tree was left: %v", left)
			}
			b, err := os.ReadFile(events)
			if err != nil {
				t.Fatal(err)
			}
			l, err := record.ParseEvent(bytes.TrimSpace(b))
			if err != nil {
				t.Fatalf("--events holds %q: %v", b, err)
			}
			if sc, ok := l.Event.(*record.StreamClosed); !ok || sc.Events != 0 || sc.Reason != record.ReasonError {
				t.Errorf("--events holds %+v, want stream.closed alone", l.Event)
			}
		})
	}
}

// TestStopWhileVersionProbeRunsAlongside: without --strict-version the
// probe runs beside the child, and a stop then ends both: the probe's whole
// process group too, inside the 4 s, with the mid-run stop's exit 3.
func TestStopWhileVersionProbeRunsAlongside(t *testing.T) {
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	home := homeWithClaude(t, strings.Replace(slowProbe, "exit 1\n", "exec sleep 60\n", 1))
	tmp := t.TempDir()
	cmd := exec.Command(bin, "run", "claude", "--credentials", "none", "-p", "hi")
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TMPDIR=" + tmp}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var probe int
	for deadline := time.Now().Add(30 * time.Second); probe == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the --version probe never started")
		}
		if b, err := os.ReadFile(filepath.Join(home, ".local", "bin", "probe.pid")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			probe, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
		}
	}
	stoppedAt := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if took := time.Since(stoppedAt); took > 4*time.Second {
		t.Errorf("metaharness took %v to exit after SIGTERM, want within 4s", took)
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	if !gone(probe) {
		t.Errorf("the probe's grandchild %d outlived the run", probe)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "mh-*")); len(left) > 0 {
		t.Errorf("the scratch tree was left: %v", left)
	}
}

// gone reports whether pid has ended (absent, or a zombie not yet reaped),
// allowing the kernel a moment to deliver the SIGKILL already sent.
func gone(pid int) bool {
	for range 100 {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// homeWithClaude is a HOME whose ~/.local/bin, first on the child's PATH,
// holds script as the claude a run finds.
func homeWithClaude(t *testing.T, script string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, ".local", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}
