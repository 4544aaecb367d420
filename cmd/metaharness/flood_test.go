package main

import (
	"bytes"
	"github.com/metaharness/metaharness/launcher/kind"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// floodClaude is a stand-in Claude Code that, between its opening record
// and its end, lets flood.py (its first argument after the settings) at
// the run's decision endpoint or at its own stdout, as an agent could.
const floodClaude = `#!/bin/sh
case "$1" in --version) echo "2.1.328 (Claude Code)"; exit 0;; esac
settings=""; while [ $# -gt 0 ]; do [ "$1" = --settings ] && settings="$2"; shift; done
printf '%s\n' '{"type":"system","subtype":"init","cwd":"'"$(pwd)"'","session_id":"s1","tools":[],"mcp_servers":[],"model":"fake","permissionMode":"dontAsk","apiKeySource":"none","claude_code_version":"2.1.328","output_style":"default","plugins":[]}'
case "$(cat "$HOME/../mode" 2>/dev/null || cat mode)" in
endpoint) /usr/bin/python3 flood.py "$settings" >&2 ;;
stdout-*) head -c "$(cat mode | cut -d- -f2)" /dev/zero | tr '\0' x; echo ;;
esac
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"still here","num_turns":1,"stop_reason":"end_turn","terminal_reason":"completed","permission_denials":[]}'
`

// floodPy opens 80 connections to the decision endpoint the settings'
// hook names, each posting an 8 MiB body with the run's token (the
// stand-in hands the flood its environment), at once.
const floodPy = `import json, os, socket, sys, threading, urllib.parse
url = urllib.parse.urlsplit(json.load(open(sys.argv[1]))["allowedHttpHookUrls"][0])
head = ("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n" % (url.path, os.environ["METAHARNESS_DECISION_TOKEN"], 8 << 20)).encode()
chunk = b"x" * (1 << 20)
def flood():
    try:
        s = socket.create_connection((url.hostname, url.port), timeout=20)
        s.sendall(head)
        for _ in range(8):
            s.sendall(chunk)
    except OSError:
        pass
threads = [threading.Thread(target=flood) for _ in range(80)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("flooded")
`

// TestFloodsMoveLittle: an agent flooding the decision endpoint (80
// connections posting 8 MiB bodies at once, with the run's token: a
// program the vendor starts holds it) moves metaharness's peak RSS by at
// most 64 MiB over the same run without the flood: none of the
// connections is the vendor's own, so each is refused before its body is
// read, and recorded. A line past the bound
// on the vendor's stdout costs what the bound costs (32 MiB held once, in
// a buffer grown by doubling, and the collector's headroom), whatever its
// length: a 300 MiB line peaks within 64 MiB of a 100 MiB one (the
// collector's timing moves either by some tens), and neither past six
// times the bound. The run goes on: its record says what
// was refused or dropped and ends as the vendor ended it. The peak is the
// run's ru_maxrss (its largest process, the stand-in's included, which is
// small: a shell, tr and python streaming through small buffers).
func TestFloodsMoveLittle(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to flood with")
	}
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	run := func(mode string) (peakKiB int64, stdout, stderr string) {
		t.Helper()
		home := homeWithClaude(t, floodClaude)
		tree := filepath.Join(home, "..", filepath.Base(home)+"-tree")
		if err := os.MkdirAll(tree, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"mode": mode, "flood.py": floodPy} {
			if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bin, "run", "claude", "--credentials", "none", "--cwd", tree, "--scratch-cwd", "-p", "hi")
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, errs.String())
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, out.String(), errs.String()
	}
	base, _, _ := run("none")
	peaks := map[string]int64{}
	for _, c := range []struct {
		mode, want string
		boundMiB   int64
	}{
		{"endpoint", `"code":"DECISION_NOT_VENDOR"`, 64},
		{"stdout-104857600", `"code":"VENDOR_LINE_TOO_LONG"`, 6 * kind.MaxVendorLine >> 20},
		{"stdout-314572800", `"code":"VENDOR_LINE_TOO_LONG"`, 6 * kind.MaxVendorLine >> 20},
	} {
		peak, stdout, stderr := run(c.mode)
		peaks[c.mode] = peak
		t.Logf("%s: peak RSS %d MiB, the run without it %d MiB", c.mode, peak>>10, base>>10)
		if peak-base > c.boundMiB<<10 {
			t.Errorf("flooding the %s moved the peak RSS by %d MiB, more than %d", c.mode, (peak-base)>>10, c.boundMiB)
		}
		if !strings.Contains(stdout, c.want) {
			t.Errorf("flooding the %s: the record lacks %s\n%s", c.mode, c.want, stderr)
		}
		if !strings.Contains(stdout, `"final_answer":{"text":"still here"`) || !strings.Contains(stdout, `"reason":"completed"`) {
			t.Errorf("flooding the %s: the run did not go on to the vendor's end\n%s", c.mode, stdout)
		}
	}
	if grown := peaks["stdout-314572800"] - peaks["stdout-104857600"]; grown > 64<<10 {
		t.Errorf("a 300 MiB line peaked %d MiB above a 100 MiB one: what a long line costs grows with it", grown>>10)
	}
}
