package frame

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/metaharness/metaharness/record"
)

// HandleLine applies one stdin line. A line that parses as a command (one
// that carries an id) gets exactly one command.result, refused or ok; a line
// that does not is reported with one line on Stderr and dropped, and the run
// goes on. Blank lines are skipped. The error is the event stream's, if
// writing it failed.
//
// Checks run in this order: the line's own form (MALFORMED, which covers an
// unknown command name, a deny without a reason and a replace without an
// input), then whether the kind honours the command (UNSUPPORTED_CONTROL,
// SHADOWED), then the command itself (UNKNOWN_CALL, TOO_LATE, and MALFORMED
// for a frame.set whose frame does not load).
func (e *Engine) HandleLine(line []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines++
	if len(bytes.TrimSpace(line)) == 0 {
		return e.err
	}
	cl, err := record.ParseCommand(line)
	if err != nil && (cl == nil || cl.ID == "") {
		fmt.Fprintf(e.cfg.Stderr, "metaharness: command-unparseable: stdin line %d is not a command, so it gets no command.result: %v\n", e.lines, err)
		return e.err
	}
	first, reused := e.ids[cl.ID]
	switch {
	case reused:
		// Answered under that id once already: this line is refused under
		// it, and does nothing.
		e.result(cl.ID, record.Refuse(record.Malformed, fmt.Sprintf("command id %q was already used by stdin line %d; each command needs an id of its own, for its one command.result", cl.ID, first)))
		return e.err
	case err != nil:
		e.result(cl.ID, record.Refuse(record.Malformed, err.Error()))
	default:
		e.result(cl.ID, e.apply(cl))
	}
	e.ids[cl.ID] = e.lines
	return e.err
}

// DropLongLine counts a stdin line the reader dropped unread because it was
// longer than max bytes, and reports it with one line on Stderr, so that
// the numbers later lines are reported under stay right.
func (e *Engine) DropLongLine(max int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines++
	fmt.Fprintf(e.cfg.Stderr, "metaharness: command-too-long: stdin line %d is longer than %d bytes, so it was dropped unread and gets no command.result; no command is that long\n", e.lines, max)
}

func (e *Engine) apply(cl *record.CommandLine) record.CommandOutcome {
	if e.cfg.Refuses != nil {
		if code := e.cfg.Refuses(cl.Name); code != "" {
			return record.Refuse(code, fmt.Sprintf("%s does not honour %s: its capabilities refuse it with %s", e.cfg.Kind, cl.Name, code))
		}
	}
	switch c := cl.Command.(type) {
	case *record.ToolDecide:
		return e.decide(cl.ID, c)
	case *record.FrameSet:
		return e.setFrame(c)
	case *record.Interrupt:
		return e.control(c, Interrupted)
	case *record.Halt:
		return e.control(c, Halted)
	default:
		return e.control(c, "")
	}
}

func (e *Engine) decide(id string, c *record.ToolDecide) record.CommandOutcome {
	cs := e.calls[c.CallID]
	switch {
	case cs == nil:
		return record.Refuse(record.UnknownCall, fmt.Sprintf("no seam has presented call %s", c.CallID))
	case cs.phase == recorded:
		return record.Refuse(record.UnknownCall, fmt.Sprintf("call %s is only in the vendor's record; no seam has asked for a decision on it", c.CallID))
	case cs.phase == closed:
		return record.Refuse(record.TooLate, fmt.Sprintf("call %s is closed: %s", c.CallID, cs.how))
	}
	if c.Decision.Decision == record.Replace {
		if in := bytes.TrimSpace(c.Decision.Input); len(in) == 0 || in[0] != '{' {
			return record.Refuse(record.Malformed, "a replace input is the call's whole input: a JSON object")
		}
		if cs.noReplace {
			return record.Refuse(record.UnsupportedControl, fmt.Sprintf("call %s is at a %s seam that runs a call only as asked, so it cannot take a replacement input; it is still pending: answer allow or deny", c.CallID, cs.seam))
		}
		if e.frame != nil {
			if v := e.frame.Verdict(cs.name, e.resolve(cs.name, c.Decision.Input)); v.Decision.Decision == record.Deny {
				return record.Refuse(record.Malformed, fmt.Sprintf("the replacement input is outside the frame in force, and call %s is still pending: %s", c.CallID, v.Decision.Reason))
			}
		}
	}
	e.close(cs, c.Decision, ByEmbedder, cs.seam, fmt.Sprintf("it was already decided by the embedder (command %s)", id))
	return record.OK(nil)
}

func (e *Engine) setFrame(c *record.FrameSet) record.CommandOutcome {
	if e.cfg.Mode == ModeObserve {
		return record.Refuse(record.UnsupportedControl, "decisions are observe: every call is allowed and recorded, so a frame would never be applied")
	}
	f, err := Parse(c.Frame)
	if err != nil {
		return record.Refuse(record.Malformed, "the frame does not load: "+err.Error())
	}
	e.staged = f
	at := fmt.Sprintf("turn %d", e.turn+1)
	return record.OK(&at)
}

// control applies interrupt, halt and the turn-tier commands through
// Config.Control. For interrupt and halt every pending call is denied (and
// its answer written) first: rule 1, the decision reaches the vendor before
// the control does.
func (e *Engine) control(c record.Command, abandons string) record.CommandOutcome {
	if e.cfg.Control == nil {
		return record.Refuse(record.UnsupportedControl, fmt.Sprintf("this run has no way to deliver %s to the child", c.CommandName()))
	}
	if abandons != "" {
		e.abandonAll(abandons)
	}
	if err := e.cfg.Control(c); err != nil {
		var cr *ControlRefusal
		if errors.As(err, &cr) {
			return record.Refuse(cr.Code, cr.Reason)
		}
		return record.Refuse(record.UnsupportedControl, fmt.Sprintf("%s could not be applied to the child: %v", c.CommandName(), err))
	}
	switch c.(type) {
	case *record.Halt:
		e.halted = true
		e.ended = Halted
	case *record.Interrupt:
		e.interrupted = true
	}
	return record.OK(nil)
}

// Halted and Interrupted begin the reason of every call that a halt or an
// interrupt abandons, so a seam can tell the two from any other deny.
const (
	Halted      = "the embedder halted the run"
	Interrupted = "the embedder interrupted the turn"
)

// ControlRefusal is a Config.Control error that refuses the command with
// its own code (a steer with no turn running is TOO_LATE) instead of
// UNSUPPORTED_CONTROL.
type ControlRefusal struct {
	Code   string
	Reason string
}

func (c *ControlRefusal) Error() string { return c.Code + ": " + c.Reason }

func (e *Engine) result(id string, out record.CommandOutcome) {
	e.emit(nil, &record.CommandResult{ID: id, Outcome: out})
}
