package codex

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// How codex 0.169 app-server shows the model's call on the wire at the
// seams the run answers (docs/wire-facts.md, part B): a dynamic tool's
// item/tool/call carries the function_call's call_id, name and arguments
// as serde read them (exact numbers, a later duplicate key winning); a
// command's approval carries the exec_command call's id and `SHELL -lc
// CMD` (-c with login false) quoted the shlex way; a patch's approval the
// apply_patch custom call's id, its paths in the item before it.

var _ kind.WireMatcher = Kind{}

// MatchRequest holds a request to the model's call.
func (Kind) MatchRequest(call loopback.Call, req decide.Request, plan *kind.Plan) error {
	switch {
	case req.Seam == record.SeamOwnedTool:
		if call.Name != req.Tool {
			return fmt.Errorf("the wire's call is %s, not %s", call.Name, req.Tool)
		}
		return sameJSON(kind.DropNulls(kind.WireInput(call)), kind.DropNulls(req.Input))
	case req.Tool == ShellTool:
		return matchCommand(call, req.Input, plan.Dir)
	case req.Tool == PatchTool:
		if call.Name != PatchTool {
			return fmt.Errorf("the wire's call is %s, not %s", call.Name, PatchTool)
		}
		return matchPatch(call, req.Input, plan.Dir)
	}
	return fmt.Errorf("codex asks about no %s", req.Tool)
}

func sameJSON(a, b json.RawMessage) error {
	x, errA := kind.DecodeJSON(a)
	y, errB := kind.DecodeJSON(b)
	if errA != nil || errB != nil || !kind.EqualJSON(x, y, kind.NumbersExact) {
		return fmt.Errorf("the arguments differ from the wire's")
	}
	return nil
}

// matchCommand: the approval's command runs the wire's cmd, with -lc or,
// for login false, -c, in the cwd its workdir names.
func matchCommand(call loopback.Call, input json.RawMessage, threadCwd string) error {
	if call.Name != ShellTool {
		return fmt.Errorf("the wire's call is %s, not %s", call.Name, ShellTool)
	}
	var args struct {
		Cmd     *string `json:"cmd"`
		Login   *bool   `json:"login"`
		Workdir string  `json:"workdir"`
	}
	var asked struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
	}
	if json.Unmarshal(kind.WireInput(call), &args) != nil || args.Cmd == nil {
		return fmt.Errorf("the wire's arguments name no cmd")
	}
	if json.Unmarshal(input, &asked) != nil {
		return fmt.Errorf("the approval names no command")
	}
	flag := " -lc "
	if args.Login != nil && !*args.Login {
		flag = " -c "
	}
	_, word, ok := strings.Cut(asked.Command, flag)
	if cmd, one := unquote(word); !ok || !one || cmd != *args.Cmd {
		return fmt.Errorf("the approval's command %q does not run the wire's %q", asked.Command, *args.Cmd)
	}
	want := threadCwd
	if args.Workdir != "" {
		want = args.Workdir
		if !filepath.IsAbs(want) {
			want = filepath.Join(threadCwd, want)
		}
	}
	if asked.Cwd != "" && filepath.Clean(asked.Cwd) != filepath.Clean(want) {
		return fmt.Errorf("the approval's cwd %s is not the wire's %s", asked.Cwd, want)
	}
	return nil
}

// unquote reads w as one POSIX shell word, the way codex quotes a command
// (bare, single-quoted, double-quoted, or segments of these one after the
// other); ok is false when w is not one word.
func unquote(w string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch c := w[i]; c {
		case '\'':
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(w[i+1 : i+1+j])
			i += j + 1
		case '"':
			i++
			for ; i < len(w) && w[i] != '"'; i++ {
				if w[i] == '\\' && i+1 < len(w) && strings.IndexByte("$`\"\\\n", w[i+1]) >= 0 {
					i++
				}
				b.WriteByte(w[i])
			}
			if i >= len(w) {
				return "", false
			}
		case '\\':
			if i+1 >= len(w) {
				return "", false
			}
			i++
			b.WriteByte(w[i])
		case ' ', '\t', '\n':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// matchPatch: every path the approval names is one the wire's patch
// names (Add, Update, Delete, Move to), resolved against the cwd.
func matchPatch(call loopback.Call, input json.RawMessage, cwd string) error {
	var patch string
	if json.Unmarshal(call.Input, &patch) != nil {
		return fmt.Errorf("the wire's patch is not text")
	}
	named := map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, h); ok {
				p = strings.TrimSpace(p)
				if !filepath.IsAbs(p) {
					p = filepath.Join(cwd, p)
				}
				named[filepath.Clean(p)] = true
			}
		}
	}
	var asked struct {
		Changes []struct {
			Path string `json:"path"`
		} `json:"changes"`
	}
	if json.Unmarshal(input, &asked) != nil {
		return fmt.Errorf("the approval names no changes")
	}
	for _, c := range asked.Changes {
		if !named[filepath.Clean(c.Path)] {
			return fmt.Errorf("the approval changes %s, which the wire's patch does not name", c.Path)
		}
	}
	return nil
}
