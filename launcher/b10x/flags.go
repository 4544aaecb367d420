package b10x

import (
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
)

// Flags are the run flags that reach the loop only. The CLI embeds them in
// `run` (through launcher/kinds) and hands them over as the spec's
// KindFlags; on claude and codex each one given is refused by name, for a
// vendor arm's scope travels sealed in the frame.
type Flags struct {
	Hooks                    string   `json:"hooks,omitempty" help:"b10x: the loop's hooks file." type:"path"`
	Driver                   string   `json:"driver,omitempty" help:"b10x: a program staged read-only for the confined run." type:"path"`
	Substrate                string   `json:"substrate,omitempty" help:"b10x: the confinement substrate's socket." type:"path"`
	SubstrateEmbedded        bool     `json:"substrate_embedded,omitempty" help:"b10x: use the embedded confinement substrate."`
	CgroupRoot               string   `json:"cgroup_root,omitempty" help:"b10x: the cgroup root for confinement." type:"path"`
	Toolchain                string   `json:"toolchain,omitempty" help:"b10x: the toolchain to expose."`
	Prices                   string   `json:"prices,omitempty" help:"b10x: a rate card; each priced request's cost is summed into session.ended." type:"path"`
	WriteScope               []string `json:"write_scope,omitempty" sep:"none" help:"b10x: GLOB=allowed|partial-only|denied (repeatable)."`
	ScopeAnnounce            string   `json:"scope_announce,omitempty" enum:",stated,silent" default:"" help:"b10x: stated (the loop's default) or silent."`
	ProcessWriteSubtree      []string `json:"process_write_subtree,omitempty" sep:"none" help:"b10x: a directory confined processes may write (repeatable)."`
	ModelWire                string   `json:"model_wire,omitempty" help:"b10x: openai-responses or anthropic-messages."`
	SubscriptionTokenFile    string   `json:"subscription_token_file,omitempty" help:"b10x: a subscription token file the loop reads (metaharness never opens it)." type:"path"`
	SubscriptionTokenEnv     string   `json:"subscription_token_env,omitempty" help:"b10x: the variable holding a subscription token, handed to the loop by name."`
	SubscriptionTokenPointer string   `json:"subscription_token_pointer,omitempty" help:"b10x: a JSON pointer into the token document."`
	APIKeySecret             string   `json:"api_key_secret,omitempty" name:"api-key-secret" help:"b10x, with --credentials api-key: the OS secret store item the loop reads its key from, over the session bus."`
}

var _ kind.KindFlags = (*Flags)(nil)

// Kind names the kind the flags reach.
func (*Flags) Kind() string { return name }

// RefuseOn refuses the first flag given, on a kind it does not reach.
func (f *Flags) RefuseOn(kind string) error {
	for _, g := range []struct {
		flag string
		set  bool
	}{
		{"--prices", f.Prices != ""},
		{"--substrate", f.Substrate != ""},
		{"--substrate-embedded", f.SubstrateEmbedded},
		{"--cgroup-root", f.CgroupRoot != ""},
		{"--toolchain", f.Toolchain != ""},
		{"--model-wire", f.ModelWire != ""},
		{"--subscription-token-file", f.SubscriptionTokenFile != ""},
		{"--subscription-token-env", f.SubscriptionTokenEnv != ""},
		{"--subscription-token-pointer", f.SubscriptionTokenPointer != ""},
		{"--api-key-secret", f.APIKeySecret != ""},
		{"--write-scope", len(f.WriteScope) > 0},
		{"--scope-announce silent", f.ScopeAnnounce == "silent"},
		{"--process-write-subtree", len(f.ProcessWriteSubtree) > 0},
		{"--hooks", f.Hooks != ""},
		{"--driver", f.Driver != ""},
	} {
		if g.set {
			return exit.Refuse(RefuseB10xOnlyFlag, "%s reaches the beyond10x loop only and cannot be honoured on %s: a vendor arm's scope and confinement travel sealed in the frame, and a flag would be a second, unsealed copy; drop %s",
				g.flag, kind, strings.Fields(g.flag)[0])
		}
	}
	return nil
}

// flagsOf are the loop's flags of spec (none given: all zero).
func flagsOf(spec *kind.Spec) Flags {
	if f, ok := spec.KindFlags.(*Flags); ok && f != nil {
		return *f
	}
	return Flags{}
}
