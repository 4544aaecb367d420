package b10xstandin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// layer is one part of the instruction package the loop hands the model:
// its manifest entry and its body.
type layer struct {
	Layer
	body string
}

func newLayer(id, kind, trust, source, capturedAt, body string) layer {
	sum := sha256.Sum256([]byte(body))
	return layer{Layer: Layer{ID: id, Kind: kind, Trust: trust, Cache: "session", Source: source, CapturedAt: capturedAt,
		Bytes: len(body), SHA256: hex.EncodeToString(sum[:])}, body: body}
}

// harnessInstructions stands in for the loop's own standing instruction.
const harnessInstructions = "You are the b10x-harness stand-in, a scripted test double of the beyond10x loop. Use the published tools to do the task.\n"

// contextLayers builds the layers the way the loop orders them (reference
// notes b10x-loop §7): harness instructions, each --context file in argv
// order as operator.context.<i>, the workspace environment, the project
// instructions (AGENTS.md, else CLAUDE.md, at the workspace root), then the
// execution environment. A --context file that cannot be read refuses the
// run before anything is sent, with the loop's reason.
func contextLayers(a args, workspace string, now time.Time) ([]layer, error) {
	at := now.UTC().Format(time.RFC3339)
	out := []layer{newLayer("harness.instructions", "harness_instructions", "harness", "", "", harnessInstructions)}
	for i, p := range a["context"] {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading the context file `%s`: %s", p, osError(err))
		}
		out = append(out, newLayer("operator.context."+strconv.Itoa(i), "provided_context", "operator", p, at, string(b)))
	}
	out = append(out, newLayer("environment.workspace", "environment", "machine", "", at, environmentBody(workspace, now)))
	if !a.has("no-project-instructions") {
		for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
			if b, err := os.ReadFile(filepath.Join(workspace, name)); err == nil {
				out = append(out, newLayer("project.instructions", "project_instructions", "workspace", name, "", string(b)))
				break
			}
		}
	}
	confinement := "none"
	switch {
	case a.has("substrate"):
		confinement = "substrate-socket"
	case a.has("substrate-embedded"):
		confinement = "substrate-embedded"
	}
	exec := fmt.Sprintf("## Execution\n\npath: %s\nconfinement: %s\n", orDefault(a.get("execution-path"), "direct"), confinement)
	return append(out, newLayer("environment.execution", "environment", "machine", "", at, exec)), nil
}

func environmentBody(workspace string, now time.Time) string {
	return "## Environment\n\n```\nworkspace: " + workspace + "\nos: " + runtime.GOOS + "\ndate: " +
		now.UTC().Format("2006-01-02") + " (UTC)\n```\n"
}

// render is the loop's rendering of the package: each layer as
// <context kind="K" trust="T"[ source="S"]>, the escaped body, a line break
// when the body lacks one, </context>; layers joined by a blank line. Only
// provided_context and project_instructions carry their source.
func render(layers []layer) string {
	parts := make([]string, len(layers))
	for i, l := range layers {
		var b strings.Builder
		b.WriteString(`<context kind="` + escapeAttr(l.Kind) + `" trust="` + escapeAttr(l.Trust) + `"`)
		if l.Kind == "provided_context" || l.Kind == "project_instructions" {
			b.WriteString(` source="` + escapeAttr(l.Source) + `"`)
		}
		b.WriteString(">\n" + escapeBody(l.body))
		if !strings.HasSuffix(l.body, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("</context>")
		parts[i] = b.String()
	}
	return strings.Join(parts, "\n\n")
}

// escapeBody escapes & first, then <; > stays, so no body can close its
// layer or open another.
func escapeBody(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "&", "&amp;"), "<", "&lt;")
}

func escapeAttr(s string) string {
	return strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;").Replace(s)
}

// osError words an I/O error as Rust's std does ("No such file or directory
// (os error 2)"), since the loop's reasons carry that text.
func osError(err error) string {
	var n syscall.Errno
	if !errors.As(err, &n) {
		return err.Error()
	}
	msg := n.Error()
	return strings.ToUpper(msg[:1]) + msg[1:] + " (os error " + strconv.Itoa(int(n)) + ")"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
