package kind

import (
	"encoding/json"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/launcher/contextfile"
)

// World is what the launcher observed before planning: nothing in a plan is
// read from anywhere else.
type World struct {
	// Env is the caller's environment (only the keys the plan reads matter).
	Env map[string]string `json:"env"`
	// RuntimeDir is the per-user directory every run's scratch tree is
	// made in, hidden from every confined child but for its own tree.
	RuntimeDir string `json:"runtime_dir,omitempty"`
	// Scratch is the run's scratch root, created by the launcher.
	Scratch string `json:"scratch"`
	// Binary is the vendor binary resolved on the child's PATH.
	Binary string `json:"binary"`
	// Self is the metaharness executable, for mcp-serve and the hook.
	Self string `json:"self"`
	// DecisionSocket is the private channel the hook and mcp-serve ask.
	DecisionSocket string `json:"decision_socket"`
	// UID and GID are the caller's: a confined child's uid 0 maps to them.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Unconfinable says why this host cannot confine a child
	// (confine.Probe), "" when it can.
	Unconfinable string `json:"unconfinable,omitempty"`
	// Controls are what the host lets a confinement apply besides its
	// namespaces (confine.Probe): a plan asks only for those that hold.
	Controls confine.Controls `json:"controls,omitzero"`
	// NonDumpable: metaharness is non-dumpable (confine.NonDumpable), so
	// no process of its uid may read its memory or environment.
	NonDumpable bool `json:"non_dumpable,omitempty"`
	// TokenCleared names the variable the token was read from and that is
	// now cleared from metaharness's own environment block
	// (confine.ForgetEnv), "" when none was.
	TokenCleared string `json:"token_cleared,omitempty"`
	// ProxyAddr is the loopback proxy's host:port under --credentials
	// loopback: the address the child reaches it at, inside its network
	// namespace too.
	ProxyAddr string `json:"proxy_addr,omitempty"`
	// GateAddr is the proxy's egress gate, on a port of its own beside
	// ProxyAddr's (the one a child's HTTPS_PROXY names): apart, the
	// command sandbox can let the agent's commands reach the gate and not
	// the model route.
	GateAddr string `json:"gate_addr,omitempty"`
	// CatalogueCopy is the checked scratch copy of --catalogue, if any, and
	// CatalogueTools the names its entries are published under over MCP.
	CatalogueCopy  string   `json:"catalogue_copy,omitempty"`
	CatalogueTools []string `json:"catalogue_tools,omitempty"`
	// CatalogueWrites is set when the catalogue declares a write entry, so
	// the server may write beneath the cwd (the frame still decides).
	CatalogueWrites bool `json:"catalogue_writes,omitempty"`
	// CatalogueDecls are the checked entries as a kind declares them to its
	// vendor itself (codex's dynamic tools), in the contract's order.
	CatalogueDecls []ToolDecl `json:"catalogue_decls,omitempty"`
	// LoopbackEnv is what the child needs to reach the model only through
	// the loopback proxy (LoopbackClient.LoopbackEnv), under --credentials
	// loopback.
	LoopbackEnv map[string]string `json:"loopback_env,omitempty"`
	// Context is the rendered --context block (contextfile.Render), and
	// ContextFiles the files as read, for a kind that hands them over as
	// files of their own (b10x).
	Context      string             `json:"context,omitempty"`
	ContextFiles []contextfile.File `json:"context_files,omitempty"`
	// RunHeader is the placeholder a child whose credential is its own
	// (--credentials api-key, or none with --model-endpoint) sends in
	// loopback.RunHeader, so the proxy knows the requests for its child's;
	// "" under --credentials loopback, where it is the child's key.
	RunHeader string `json:"run_header,omitempty"`
	// Wire is the model API whose answers the proxy reads (H13), "" when
	// the run's model traffic does not pass a proxy that reads them.
	Wire string `json:"wire,omitempty"`
	// LoopbackURL is the proxy's base URL (http://127.0.0.1:PORT), for a
	// kind that names it in its own configuration (codex's provider entry).
	LoopbackURL string `json:"loopback_url,omitempty"`
	// MemoryAbove lists memory files (the kind's Memory.Shapes) found above the
	// child's cwd; MemoryAtRoot those in the cwd itself (attest.WalkMemory).
	MemoryAbove  []string `json:"memory_above,omitempty"`
	MemoryAtRoot []string `json:"memory_at_root,omitempty"`
	// Git are the git directories outside a --cwd worktree that its .git
	// file names (the run's findGitDirs), which the child's view binds; nil
	// when there are none, or none metaharness trusts.
	Git *GitDirs `json:"git,omitempty"`
	// GitSeal is what the operator's git runs or obeys in a --cwd tree
	// (its git directory's config and hooks, a linked worktree's .git file
	// and links back, a core.hooksPath inside the tree), each there and no
	// link, which the child's view binds read-only; GitUnsealable those
	// of them that are links the child could point elsewhere, which no
	// bind holds. Both found by the run (its observeGitSeal).
	GitSeal       []string `json:"git_seal,omitempty"`
	// OthersCustody is what the user's other live runs keep from every
	// child (their token files, signing keys, records), which this child's
	// view covers; CustodyExposed is what this run keeps that a child of
	// one of them, started before this one, can read. Both from the
	// registry of live runs in the runtime directory.
	OthersCustody  []string `json:"others_custody,omitempty"`
	CustodyExposed []string `json:"custody_exposed,omitempty"`
	GitUnsealable []string `json:"git_unsealable,omitempty"`
	// Vendor is what the kind observed of its binary before planning
	// (Observer), in the kind's own shape; absent when it observes nothing.
	Vendor json.RawMessage `json:"vendor,omitempty"`
}

// ToolDecl is one catalogue entry as its vendor is told of it: the name it
// is published under, its summary and its input schema, verbatim.
type ToolDecl struct {
	Name    string          `json:"name"`
	Summary string          `json:"summary"`
	Input   json.RawMessage `json:"input"`
}
