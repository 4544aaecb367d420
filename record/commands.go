package record

import "encoding/json"

// Command is the payload of one metaharness.command/1 line.
type Command interface {
	// CommandName is the wire name, for example "tool.decide".
	CommandName() string
}

// CommandNames lists the seven command names.
var CommandNames = []string{
	"tool.decide", "frame.set", "message.inject", "steer", "permission.set",
	"interrupt", "halt",
}

func newCommand(name string) Command {
	switch name {
	case "tool.decide":
		return &ToolDecide{}
	case "frame.set":
		return &FrameSet{}
	case "message.inject":
		return &MessageInject{}
	case "steer":
		return &Steer{}
	case "permission.set":
		return &PermissionSet{}
	case "interrupt":
		return &Interrupt{}
	case "halt":
		return &Halt{}
	}
	return nil
}

// ToolDecide answers one pending call.
type ToolDecide struct {
	CallID   string   `json:"call_id"`
	Decision Decision `json:"decision"`
}

// FrameSet replaces the frame in force from the next turn or step boundary.
// The frame stays raw here; package frame loads and checks it.
type FrameSet struct {
	Frame json.RawMessage `json:"frame"`
}

// MessageInject adds text between turns.
type MessageInject struct {
	Text string `json:"text"`
}

// Steer adds text mid-turn.
type Steer struct {
	Text string `json:"text"`
}

// PermissionSet changes the vendor's permission posture (vendor vocabulary).
type PermissionSet struct {
	Posture string `json:"posture"`
}

// Interrupt stops the current turn; pending calls are denied first.
type Interrupt struct {
	Reason *string `json:"reason" jsonschema:"nullable"`
}

// Halt ends the run; pending calls are denied first.
type Halt struct {
	Reason *string `json:"reason" jsonschema:"nullable"`
}

func (*ToolDecide) CommandName() string    { return "tool.decide" }
func (*FrameSet) CommandName() string      { return "frame.set" }
func (*MessageInject) CommandName() string { return "message.inject" }
func (*Steer) CommandName() string         { return "steer" }
func (*PermissionSet) CommandName() string { return "permission.set" }
func (*Interrupt) CommandName() string     { return "interrupt" }
func (*Halt) CommandName() string          { return "halt" }
