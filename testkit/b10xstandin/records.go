package b10xstandin

import (
	"encoding/json"
	"strings"
)

// The loop writes each record with serde's derive: one compact object per
// line, "kind" first, then the fields in declaration order, optional ones
// left out when empty. Go's encoder keeps struct field order, so each record
// below is a struct whose fields are declared in the loop's order.

// Started is the opening record (kind "started").
type Started struct {
	Kind             string     `json:"kind"`
	Model            string     `json:"model"`
	PublishedTools   []string   `json:"published_tools"`
	Operations       []string   `json:"operations,omitempty"`
	Withheld         []Withheld `json:"withheld"`
	Skills           []string   `json:"skills"`
	Agents           []string   `json:"agents"`
	Profiles         []Digested `json:"profiles"`
	Context          []Layer    `json:"context"`
	Toolchains       []Digested `json:"toolchains"`
	CredentialSource string     `json:"credential_source"`
	Cwd              string     `json:"cwd,omitempty"`
}

// Withheld is a tool the loop declared and could not publish.
type Withheld struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Digested names a profile or toolchain and the digest of what was read.
type Digested struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
}

// Layer is one context layer's manifest entry: everything but the body.
type Layer struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Trust      string `json:"trust"`
	Cache      string `json:"cache"`
	Source     string `json:"source,omitempty"`
	CapturedAt string `json:"captured_at,omitempty"`
	Bytes      int    `json:"bytes"`
	SHA256     string `json:"sha256"`
}

// Refused is the CLI's own record of a run refused before the loop started.
type Refused struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Line encodes one record as the loop writes it: compact, no HTML escaping
// (serde_json leaves <, > and & alone), no trailing newline.
func Line(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // the records are plain structs of strings, numbers and lists
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// refusedLine is a refused record; a multi-line reason is joined by single
// spaces, as the CLI joins it.
func refusedLine(reason string) []byte {
	var parts []string
	for _, l := range strings.Split(reason, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return Line(Refused{Kind: "refused", Reason: strings.Join(parts, " ")})
}
