package kind

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/record"
)

// Status says how far a control is proven for a kind: delivered (driven and
// pinned by a vector), unverified (present, not driven, so requiring it is
// refused) or absent.
type Status string

const (
	Delivered  Status = "delivered"
	Unverified Status = "unverified"
	Absent     Status = "absent"
)

// Capabilities is a kind's descriptor, printed by `capabilities <KIND>`.
type Capabilities struct {
	Adapter        AdapterName               `json:"adapter"`
	VersionsPinned []string                  `json:"versions_pinned"`
	Tiers          Tiers                     `json:"tiers"`
	Commands       map[string]CommandSupport `json:"commands"`
	DecisionModes  map[string]Status         `json:"decision_modes"`
	// Rendering maps each neutral operation to the vendor tool that performs
	// it, or null when the vendor has none.
	Rendering map[string]*string `json:"rendering"`
	// CatalogueRendering is the name under which a catalogue entry reaches
	// the model inside a run, with {mcp} standing for the entry's mcp
	// rendering; null when the kind carries no catalogue. It exists only
	// inside a run, so it is published here, before one.
	CatalogueRendering *string `json:"catalogue_rendering"`
}

// AdapterName names the kind and its class (harness or direct_provider).
type AdapterName struct {
	ID    string `json:"id"`
	Class string `json:"class"`
}

// Tiers are the four control tiers (reference notes §4.5).
type Tiers struct {
	Registration Status `json:"registration"`
	Call         Status `json:"call"`
	Turn         Status `json:"turn"`
	Kill         Status `json:"kill"`
}

// CommandSupport is "honoured" or {"refused":"<code>"}.
type CommandSupport struct {
	RefusedWith string // empty when honoured
}

// Honoured and RefusedWith build the two forms.
var Honoured = CommandSupport{}

func RefusedWith(code string) CommandSupport { return CommandSupport{RefusedWith: code} }

// StopOnly applies a command to a vendor that reads no control line
// (StopOnlyCommands): interrupt and halt stop its process group; anything
// else is an error naming the kind.
func StopOnly(run Services, kind string, c record.Command) error {
	switch c.(type) {
	case *record.Interrupt, *record.Halt:
		run.Stop()
		return nil
	}
	return fmt.Errorf("%s cannot apply %s", kind, c.CommandName())
}

// StopOnlyCommands is what a vendor that reads no control line honours:
// tool.decide at its seams, interrupt and halt by stopping it; every
// other command is refused as unsupported.
func StopOnlyCommands() map[string]CommandSupport {
	return map[string]CommandSupport{
		"tool.decide":    Honoured,
		"interrupt":      Honoured,
		"halt":           Honoured,
		"frame.set":      RefusedWith(record.UnsupportedControl),
		"message.inject": RefusedWith(record.UnsupportedControl),
		"steer":          RefusedWith(record.UnsupportedControl),
		"permission.set": RefusedWith(record.UnsupportedControl),
	}
}

func (c CommandSupport) MarshalJSON() ([]byte, error) {
	if c.RefusedWith == "" {
		return []byte(`"honoured"`), nil
	}
	return json.Marshal(map[string]string{"refused": c.RefusedWith})
}

// Support returns how the kind answers a command; a command missing from
// the table is refused UNSUPPORTED_CONTROL.
func (c *Capabilities) Support(command string) CommandSupport {
	if s, ok := c.Commands[command]; ok {
		return s
	}
	return RefusedWith(record.UnsupportedControl)
}

// Mode returns a decision mode's status; a missing mode is absent.
func (c *Capabilities) Mode(mode frame.Mode) Status {
	if s, ok := c.DecisionModes[string(mode)]; ok {
		return s
	}
	return Absent
}

// JSON renders the descriptor as indented JSON with a trailing newline.
func (c *Capabilities) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering the %s descriptor: %w", c.Adapter.ID, err)
	}
	return append(b, '\n'), nil
}

// Render lists each operation's vendor rendering, one line each, then the
// catalogue rendering.
func (c *Capabilities) Render() string {
	var b strings.Builder
	for _, op := range record.Operations {
		tool := "(no vendor tool)"
		if t := c.Rendering[op]; t != nil {
			tool = *t
		}
		fmt.Fprintf(&b, "%-16s -> %s\n", op, tool)
	}
	cat := "(no catalogue: refused on this kind)"
	if c.CatalogueRendering != nil {
		cat = *c.CatalogueRendering
	}
	fmt.Fprintf(&b, "%-16s -> %s\n", "catalogue entry", cat)
	return b.String()
}

// Str returns a pointer to s, for rendering tables.
func Str(s string) *string { return &s }
