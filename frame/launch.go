package frame

import (
	"errors"
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// Launch refusal names (exit 2), printed as "metaharness: <name>: …".
const (
	RefuseFrameUnreadable     exit.Name = "frame-unreadable"
	RefuseFrameInvalid        exit.Name = "frame-invalid"
	RefuseFrameDigestMismatch exit.Name = "frame-digest-mismatch"
	RefuseObserveWithFrame    exit.Name = "observe-with-frame"
)

// LoadForRun loads the --frame file of a run. Its error is always an
// *exit.Refusal naming the flag and the path, so the CLI prints it as is
// and never looks inside a frame.
func LoadForRun(path string) (*Frame, error) {
	f, err := Load(path)
	if err != nil {
		return nil, Refusal(path, err)
	}
	return f, nil
}

// Refusal maps a Load or Parse error for the frame at path to the launch
// refusal: frame-unreadable, frame-invalid (not JSON, not a frame, a bad
// shape) or frame-digest-mismatch.
func Refusal(path string, err error) *exit.Refusal {
	switch {
	case errors.Is(err, ErrUnreadable):
		return exit.Wrap(RefuseFrameUnreadable, err, "--frame %s cannot be read; pass the path of a sealed %s file", path, Format)
	case errors.Is(err, ErrDigestMismatch):
		return exit.Wrap(RefuseFrameDigestMismatch, err, "--frame %s does not match its digest: its content changed after it was sealed, or it was never sealed; "+
			"metaharness never reseals a frame: restore the sealed file, or seal the content you mean (%s, docs/frames.md)", path, SealCommand)
	default:
		return exit.Wrap(RefuseFrameInvalid, err, "--frame %s is not a valid %s document; see docs/frames.md and schemas/frame.schema.json", path, Format)
	}
}

// CheckMode refuses observe with a frame: observe decides nothing, so the
// frame would silently never apply.
func CheckMode(mode Mode, f *Frame) error {
	if mode == ModeObserve && f != nil {
		return exit.Refuse(RefuseObserveWithFrame, "--decisions observe allows and records every call, so a frame would never be applied (%s); "+
			"drop --frame, or decide with --decisions frame or ask", record.UnsupportedControl)
	}
	return nil
}

// RequiredCommands lists the commands a run's configuration needs the kind
// to honour: halt and interrupt always, tool.decide when the embedder or a
// frame decides (ask, or a frame given), and under observe when the kind
// presents its calls at a seam that observe answers (seamed). A kind with
// no call seam (the b10x loop decides its own calls) only records them under
// observe, and needs no tool.decide for it.
func RequiredCommands(mode Mode, withFrame, seamed bool) []string {
	req := []string{"halt", "interrupt"}
	if mode == ModeAsk || (mode == ModeObserve && seamed) || withFrame {
		req = append(req, "tool.decide")
	}
	return req
}

// CheckControls is the run-start control check. For every required command
// the kind refuses (refuses returns its code, "" when honoured) it writes a
// command.result with id "start/<command>" to w; if there was any, it
// returns the refusal that ends the run (exit 2), named after the first
// code (unsupported-control, shadowed).
func CheckControls(w *record.Writer, kind string, mode Mode, withFrame, seamed bool, refuses func(command string) string) error {
	config := "--decisions " + string(mode)
	if withFrame {
		config += " with --frame"
	}
	var first string
	var named []string
	for _, cmd := range RequiredCommands(mode, withFrame, seamed) {
		code := refuses(cmd)
		if code == "" {
			continue
		}
		reason := fmt.Sprintf("%s does not honour %s, which %s needs", kind, cmd, config)
		if err := w.Emit(&record.CommandResult{ID: "start/" + cmd, Outcome: record.Refuse(code, reason)}); err != nil {
			return err
		}
		if first == "" {
			first = code
		}
		named = append(named, cmd+" ("+code+")")
	}
	if first == "" {
		return nil
	}
	return exit.Refuse(exit.Name(strings.ToLower(strings.ReplaceAll(first, "_", "-"))),
		"%s cannot honour %s, which %s needs; see `metaharness capabilities %s` for what it honours, and choose a configuration it supports",
		kind, strings.Join(named, ", "), config, kind)
}
