package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/record"
)

// chatty is a claude that prints its opening record, forty heartbeats and a
// clean end.
const chatty = `#!/bin/sh
case "$1" in --version) echo "2.1.328 (Claude Code)"; exit 0;; esac
printf '%s\n' '{"type":"system","subtype":"init","cwd":"'"$(pwd)"'","session_id":"s1","tools":[],"mcp_servers":[],"model":"fake","permissionMode":"dontAsk","apiKeySource":"none","claude_code_version":"2.1.328","output_style":"default","plugins":[]}'
i=0; while [ $i -lt 40 ]; do printf '%s\n' '{"type":"system","subtype":"heartbeat"}'; i=$((i+1)); done
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"stop_reason":"end_turn","terminal_reason":"completed","permission_denials":[]}'
`

// TestEventsFileOnAFullDisk: --events on a disk that fills up (a 4 KiB
// tmpfs in a private mount namespace) fails on its own. stdout still gets
// every line, numbered from 1 without a repeat, with the failure named in a
// STREAM_SINK_FAILED warning and stream.closed counting right; stderr names
// it once; --attestation (on another disk) names the sink; the run exits 2.
func TestEventsFileOnAFullDisk(t *testing.T) {
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("no private mount namespace here (needs root and unshare): %v", err)
	}
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	home := homeWithClaude(t, chatty)
	full := filepath.Join(home, "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	att := filepath.Join(home, "att.json")
	cmd := exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs -o size=4k tmpfs "$1" && shift && exec "$@"`, "sh", full,
		bin, "run", "claude", "--credentials", "none", "--events", filepath.Join(full, "events.jsonl"), "--attestation", att, "-p", "hi")
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit %d, want 2\nstderr: %s", code, stderr.String())
	}
	var lines []*record.EventLine
	for i, raw := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		l, err := record.ParseEvent(raw)
		if err != nil {
			t.Fatalf("stdout line %d: %v", i+1, err)
		}
		if l.Seq != uint64(i+1) {
			t.Fatalf("stdout line %d has seq %d", i+1, l.Seq)
		}
		lines = append(lines, l)
	}
	if c := record.CheckCompleteness(lines); c.State != record.Complete {
		t.Errorf("stdout: %s", c.Line())
	}
	if n := len(lines); n < 44 {
		t.Errorf("stdout has %d lines, want every event", n)
	}
	var named int
	for _, l := range lines {
		if w, ok := l.Event.(*record.Warning); ok && w.Code == record.WarnSinkFailed && strings.Contains(w.Message, "events.jsonl") && strings.Contains(w.Message, "no space left") {
			named++
		}
	}
	if named != 1 {
		t.Errorf("%d STREAM_SINK_FAILED warnings on stdout, want 1", named)
	}
	errLines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(errLines) != 1 || !strings.HasPrefix(errLines[0], "metaharness: events-file: --events ") || !strings.Contains(errLines[0], "no space left on device") {
		t.Errorf("stderr %q, want the one events-file line", stderr.String())
	}
	b, err := os.ReadFile(att)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ExitCode       int                  `json:"exit_code"`
		StreamFailures []record.SinkFailure `json:"stream_failures"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ExitCode != 2 || len(doc.StreamFailures) != 1 || !strings.HasSuffix(doc.StreamFailures[0].Sink, "events.jsonl") {
		t.Errorf("attestation exit_code %d, stream_failures %+v", doc.ExitCode, doc.StreamFailures)
	}
}
