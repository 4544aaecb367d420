package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/record"
)

// The agent's commands reach less than the vendor (issue 33): from one
// allowed command of the real Claude Code and Codex, in the loopback-only
// namespace, the agent looks for what the vendor holds (its credential for
// the proxy, the proxy's address, a messaging socket), tries every port
// listening in the child's network (the model route among them) and posts a
// model request of its own, forcing a call, on every way it finds; then it
// posts a decision request of its own to the run's decision endpoint. The
// kernel keeps it off the model route and the endpoint; where it does not
// (--unconfined), the proxy and the endpoint tell the vendor's connections
// from the commands' and refuse theirs. Either way nothing the agent asked
// reaches the model, no request of its making is decided, and H13 is the
// gap that says what was tried.

// ownModelRequest is a model request of the agent's, forcing a Bash call.
const ownModelRequest = `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"Bash"}}`

// reachProbe prints what the agent's command inherited of the vendor's,
// whether Claude Code's messaging socket is there, and what a model request
// of its own gets with the vendor's variables, where it has them, at the
// base URL they name.
const reachProbe = `echo "VARS:$(env | cut -d= -f1 | grep -E '^(ANTHROPIC_|CLAUDE_CODE_MESSAGING|METAHARNESS_LOOPBACK|METAHARNESS_DECISION|OPENAI_API_KEY)' | sort | tr '\n' ' ')"
echo "SOCKS:$(find "${TMPDIR:-/tmp}" "$HOME" ${CLAUDE_CONFIG_DIR:+"$CLAUDE_CONFIG_DIR"} -type s 2>/dev/null | wc -l)"
if [ -n "$ANTHROPIC_BASE_URL" ]; then
  echo "OWN-AT-BASE: $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -X POST -H 'content-type: application/json' -H "Authorization: Bearer $ANTHROPIC_AUTH_TOKEN" -d '` + ownModelRequest + `' "$ANTHROPIC_BASE_URL/v1/messages")"
fi`

// portProbe prints how each TCP port listening in the command's network
// answers a connection, and what a model request of its own gets on each
// that opens (the child's network namespace holds only the proxy's ports).
const portProbe = `/usr/bin/python3 - <<'PY'
import errno, socket
ports = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        f = row.split()
        if f[3] == "0A":
            ports.add(int(f[1].split(":")[1], 16))
for p in sorted(ports):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", p))
        print("PORT %d open" % p)
        with open("/tmp/open-ports", "a") as o:
            o.write("%d\n" % p)
    except OSError as e:
        print("PORT %d %s" % (p, errno.errorcode.get(e.errno, e.errno)))
    s.close()
PY
for p in $(cat /tmp/open-ports 2>/dev/null); do
  echo "OWN-ON-$p: $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -X POST -H 'content-type: application/json' -d '` + ownModelRequest + `' http://127.0.0.1:$p/v1/messages)"
done
rm -f /tmp/open-ports`

// claudeForgedDecision posts a decision request of the agent's to the
// decision endpoint the scratch settings name, for the model's own call
// (on the wire, so only who asks can tell it from Claude Code's), with
// the run's decision token where the command holds it; and looks for the
// decision socket, which a run without the owned surface does not open.
const claudeForgedDecision = `settings="$(dirname "$TMPDIR")/claude-settings.json"
url=$(grep -o '"url": "[^"]*"' "$settings" | head -1 | cut -d'"' -f4)
echo "FORGED-DECISION: $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --max-time 10 -X POST -H 'content-type: application/json' -H "Authorization: Bearer ${METAHARNESS_DECISION_TOKEN:-none}" -d '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"id"},"tool_use_id":"toolu_0001"}' "$url")"
[ -e "$(dirname "$TMPDIR")/decisions.sock" ] && echo "SOCKET: present" || echo "SOCKET: absent"`

// TestRunClaudeCommandsReachLess: under a frame admitting the shell, an
// embedder allowing everything, and observe, the agent's command inherits
// none of the vendor's variables (the decision token among them) and finds
// no messaging socket and no decision socket; of the ports listening in
// its network only the egress gate's opens (the model route's and the
// decision endpoint's are refused by the kernel, EACCES); its model
// request on the gate's port is refused (421) and recorded; its decision
// request never connects; the upstream sees only Claude Code's own two
// requests; H13 is a gap, and the audit exits 1.
func TestRunClaudeCommandsReachLess(t *testing.T) {
	for _, mode := range []string{"frame", "ask", "observe"} {
		t.Run(mode, func(t *testing.T) {
			o := newOperator(t, randomToken("sk-ant-test-REAL-"))
			res, up, out := runReach(t, o, mode, reachProbe+"\n"+portProbe+"\n"+claudeForgedDecision)
			if !strings.Contains(out, "VARS:\n") || !strings.Contains(out, "SOCKS:0\n") {
				t.Errorf("the command inherited the vendor's variables or found its messaging socket:\n%s", out)
			}
			open, refused := portLines(out)
			if len(open) != 1 || len(refused) != 2 || !strings.HasSuffix(refused[0], " EACCES") || !strings.HasSuffix(refused[1], " EACCES") {
				t.Errorf("ports: open %v, refused %v; want the gate's open and the model route's and the decision endpoint's refused by the kernel", open, refused)
			}
			if len(open) == 1 && !strings.Contains(out, "OWN-ON-"+strings.Fields(open[0])[1]+": 421") {
				t.Errorf("the agent's model request on the gate's port was not refused 421:\n%s", out)
			}
			if !strings.Contains(out, "FORGED-DECISION: 000\n") || !strings.Contains(out, "SOCKET: absent") {
				t.Errorf("the forged decision request connected, or the decision socket was there:\n%s", out)
			}
			reachHeld(t, res, up, claudeForged, "toolu_0001", attest.ModelRequestNotVendor)
		})
	}
}

// TestRunClaudeUnconfinedCommandsCannotAskTheModel: with no kernel control
// (--unconfined), the agent's command holds Claude Code's credential for
// the proxy and its address, and the run's decision token; its model
// request there, forcing a call, is refused 403 as not the vendor's (its
// connection is not Claude Code's process's), never forwarded, and
// recorded; so is its decision request at the endpoint, token and all,
// for the model's own call: never decided (DECISION_NOT_VENDOR). H13 is a
// gap.
func TestRunClaudeUnconfinedCommandsCannotAskTheModel(t *testing.T) {
	o := newOperator(t, randomToken("sk-ant-test-REAL-"))
	res, up, out := runReach(t, o, "frame", reachProbe+"\n"+claudeForgedDecision, "--unconfined")
	if !strings.Contains(out, "ANTHROPIC_AUTH_TOKEN") || !strings.Contains(out, "OWN-AT-BASE: 403") {
		t.Errorf("unconfined, the command should hold the variables and be refused at the base URL:\n%s", out)
	}
	if !strings.Contains(out, "METAHARNESS_DECISION_TOKEN") || !strings.Contains(out, "FORGED-DECISION: 403\n") {
		t.Errorf("unconfined, the command's decision request should be refused 403 as not the vendor's:\n%s", out)
	}
	reachHeld(t, res, up, claudeForged, "toolu_0001", attest.ModelRequestNotVendor, attest.DecisionNotVendor)
}

// codexOwnRequest posts a model request of the agent's, with codex's
// credential for the proxy where the command has it, at the base URL codex's
// provider entry names.
const codexOwnRequest = `url=$(grep base_url "$CODEX_HOME/config.toml" | head -1 | cut -d'"' -f2)
echo "OWN-AT-BASE: $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --max-time 10 -X POST -H 'content-type: application/json' -H "Authorization: Bearer ${METAHARNESS_LOOPBACK_KEY:-none}" -d '{"model":"m","input":"go","tools":[{"type":"function","name":"shell","parameters":{"type":"object"}}],"tool_choice":"required"}' "${url%/v1}/v1/responses")"`

// TestRunCodexCommandsReachLess: the real Codex runs one command outside
// its own sandbox (escalated, which the run allows): under a frame, an
// embedder allowing it, and observe, the command inherits none of codex's
// own variables; of the ports listening in its network only the egress
// gate's opens, the model route's refused by the kernel; its model request
// at the base URL the config names never connects; on the gate's port it
// is refused and recorded, so H13 is a gap.
func TestRunCodexCommandsReachLess(t *testing.T) {
	for _, mode := range []string{"frame", "ask", "observe"} {
		t.Run(mode, func(t *testing.T) {
			res, up, out := runCodexReach(t, mode, reachProbe+"\n"+portProbe+"\n"+codexOwnRequest)
			if !strings.Contains(out, "VARS:\n") {
				t.Errorf("the command inherited codex's own variables:\n%s", out)
			}
			open, refused := portLines(out)
			if len(open) != 1 || len(refused) != 1 || !strings.HasSuffix(refused[0], " EACCES") {
				t.Errorf("ports: open %v, refused %v; want the gate's open and the model route's refused by the kernel", open, refused)
			}
			if !strings.Contains(out, "OWN-AT-BASE: 000") {
				t.Errorf("the agent's model request at the base URL connected:\n%s", out)
			}
			codexReachHeld(t, res, up)
		})
	}
}

// TestRunCodexUnconfinedCommandsCannotAskTheModel: unconfined, the
// command holds codex's credential for the proxy; its model request at the
// base URL is refused 403 as not the vendor's, never forwarded: H13 a gap.
func TestRunCodexUnconfinedCommandsCannotAskTheModel(t *testing.T) {
	res, up, out := runCodexReach(t, "frame", reachProbe+"\n"+codexOwnRequest, "--unconfined")
	if !strings.Contains(out, "METAHARNESS_LOOPBACK_KEY") || !strings.Contains(out, "OWN-AT-BASE: 403") {
		t.Errorf("unconfined, the command should hold the key and be refused at the base URL:\n%s", out)
	}
	codexReachHeld(t, res, up)
}

// runCodexReach runs Codex once in the mode with one escalated command
// (which a frame admitting the shell, or an embedder, allows).
func runCodexReach(t *testing.T, mode, command string, more ...string) (*runResult, *scripted.Server, string) {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"cmd": command, "sandbox_permissions": "require_escalated", "justification": "the test asks"})
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: input}},
		{Text: "DONE"},
	}})
	res, out := reachOnce(t, newCodexOperator(t, randomToken("sk-test-REAL-")), up, mode, append([]string{"--model", "gpt-5.5"}, more...)...)
	return res, up, out
}

// codexReachHeld: the agent's own model request never reached the
// upstream, the proxy refused and recorded one, and the audit's H13 is the
// gap that says so (exit 1).
func codexReachHeld(t *testing.T, res *runResult, up *scripted.Server) {
	t.Helper()
	for _, r := range up.Requests() {
		if bytes.Contains(r.Body, []byte(`"tool_choice":"required"`)) {
			t.Error("the agent's own model request reached the upstream")
		}
	}
	refused := false
	for _, ev := range res.find("warning") {
		refused = refused || ev.(*record.Warning).Code == attest.ModelRequestNotVendor
	}
	if !refused || !bytes.Contains(res.stderr, []byte("H13  gap gating")) || res.code != 1 {
		t.Errorf("refused at the proxy: %v; exit %d, want the audit's gap on H13:\n%s", refused, res.code, res.stderr)
	}
}

// runReach runs Claude Code once in the mode with one Bash call of command
// and returns the run, its upstream and what the command printed.
func runReach(t *testing.T, o *operator, mode, command string, more ...string) (*runResult, *scripted.Server, string) {
	t.Helper()
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":` + strconvQuote(command) + `}`)}},
		{Text: "DONE"},
	}})
	res, out := reachOnce(t, o, up, mode, more...)
	return res, up, out
}

// reachOnce runs o's kind once on up in the mode (a frame admitting the
// shell under frame, an embedder allowing every call under ask), audited,
// in o's tree, and returns the run and what its one command printed.
func reachOnce(t *testing.T, o *operator, up *scripted.Server, mode string, more ...string) (*runResult, string) {
	t.Helper()
	t.Cleanup(up.Close)
	o.write("notes.md", "notes\n")
	args := append([]string{"--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--cwd", o.tree, "--scratch-cwd", "--decisions", mode, "--audit", "-p", "go"}, more...)
	var answer func(ev *record.EventLine, stdin func(string))
	switch mode {
	case "frame":
		args = append(args, "--frame", o.sealFrame("shell"))
	case "ask":
		answer = allowEveryCall
	}
	res := o.run(answer, args...)
	results := modelSaw(up)
	if len(results) == 0 {
		t.Fatalf("the model saw no tool result\n%s", res.stderr)
	}
	t.Logf("the command printed:\n%s", results[0])
	return res, results[0]
}

// allowEveryCall is an embedder that allows every call it is asked about.
func allowEveryCall(ev *record.EventLine, stdin func(string)) {
	if r, ok := ev.Event.(*record.ToolRequested); ok && r.DecisionRequired {
		stdin(`{"format":"metaharness.command/1","id":"d-` + r.CallID + `","command":"tool.decide","call_id":"` + r.CallID + `","decision":{"decision":"allow"}}`)
	}
}

// portLines are the probe's PORT lines, split into the open and the rest.
func portLines(out string) (open, refused []string) {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "PORT ") {
			if strings.HasSuffix(l, " open") {
				open = append(open, l)
			} else {
				refused = append(refused, l)
			}
		}
	}
	return open, refused
}

// reachHeld: the agent's own model request (its body holding forged)
// never reached the upstream, no call but the model's was decided, and
// that once (modelCall, when its id is known; else exactly one call),
// each code is among the warnings, and the audit's H13 is a gap (exit 1).
func reachHeld(t *testing.T, res *runResult, up *scripted.Server, forged, modelCall string, codes ...string) {
	t.Helper()
	for _, r := range up.Requests() {
		if bytes.Contains(r.Body, []byte(forged)) {
			t.Error("the agent's own model request reached the upstream")
		}
	}
	decided := map[string]int{}
	for _, ev := range res.find("tool.decided") {
		decided[ev.(*record.ToolDecided).CallID]++
	}
	once := len(decided) == 1
	for _, n := range decided {
		once = once && n == 1
	}
	if modelCall != "" && (len(decided) > 1 || len(decided) == 1 && decided[modelCall] != 1) || modelCall == "" && !once {
		t.Errorf("decisions by call %v, want the model's call once", decided)
	}
	warned := map[string]bool{}
	for _, ev := range res.find("warning") {
		warned[ev.(*record.Warning).Code] = true
	}
	for _, c := range codes {
		if !warned[c] {
			t.Errorf("no %s warning", c)
		}
	}
	if !bytes.Contains(res.stderr, []byte("H13  gap gating")) || res.code != 1 {
		t.Errorf("exit %d, want the audit's gap on H13:\n%s", res.code, res.stderr)
	}
}

// claudeForged is what the agent's own Messages API request forces.
const claudeForged = `"tool_choice":{"type":"tool","name":"Bash"}`
