package attest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/metaharness/metaharness/record"
)

// RowID names one row of the floor. Its values are the variables below and
// nothing else: the field is unexported, so a row this package does not
// list is a compile error wherever a claim names one, never an edit that
// silently finds nothing.
type RowID struct{ id string }

// String is the row as the wire spells it ("h4").
func (r RowID) String() string { return r.id }

// JSONSchemaAlias publishes a row as the string the wire spells.
func (RowID) JSONSchemaAlias() any { return "" }

// MarshalText writes the wire's spelling.
func (r RowID) MarshalText() ([]byte, error) { return []byte(r.id), nil }

// UnmarshalText reads a row the floor lists, and refuses any other.
func (r *RowID) UnmarshalText(b []byte) error {
	for _, spec := range Rows {
		if spec.ID.id == string(b) {
			*r = spec.ID
			return nil
		}
	}
	return fmt.Errorf("attest: %q is not a row of the floor", b)
}

// The rows, as the wire spells them (record.RowHow.Row and friends).
var (
	H1a = RowID{"h1a"}
	H1b = RowID{"h1b"}
	H2  = RowID{"h2"}
	H3  = RowID{"h3"}
	H4  = RowID{"h4"}
	H5  = RowID{"h5"}
	H6  = RowID{"h6"}
	H7  = RowID{"h7"}
	H8  = RowID{"h8"}
	H9  = RowID{"h9"}
	H10 = RowID{"h10"}
	H11 = RowID{"h11"}
	H12 = RowID{"h12"}
	H13 = RowID{"h13"}
)

// claimState is where a claim puts a row.
type claimState int

const (
	imposed claimState = iota + 1
	unavailable
	declared
)

type claimed struct {
	state claimState
	words string
	since int // when the row came into its state: lists other than imposed keep that order
}

// Claim is metaharness's claim about one launch, row by row, as the kind's
// plan and then the confinement build it: each row is claimed once, in one
// state (imposed, unavailable or declared), and later hands may add to
// what it says (Enforce, Add) or take an imposition back (Withdraw). The
// claim becomes session.started.hermetic (Attestation); Evaluate later
// holds the record to it.
type Claim struct {
	mode, decisions string
	rows            map[RowID]*claimed
	changes         int // state changes so far, for claimed.since
	ambient         []string
}

// NewClaim starts the claim of a run in hermetic mode mode, deciding under
// decisions.
func NewClaim(mode, decisions string) *Claim {
	return &Claim{mode: mode, decisions: decisions, rows: map[RowID]*claimed{}}
}

func (c *Claim) put(row RowID, st claimState, words string) {
	if _, ok := c.rows[row]; ok {
		panic(fmt.Sprintf("attest: row %s claimed twice", row))
	}
	c.changes++
	c.rows[row] = &claimed{st, words, c.changes}
}

// claimedRow is row's entry, which a later hand must find: editing a row
// the plan never claimed is a bug in the plan, not a silent no-op.
func (c *Claim) claimedRow(row RowID, verb string) *claimed {
	r, ok := c.rows[row]
	if !ok {
		panic(fmt.Sprintf("attest: %s on row %s, which the launch never claimed", verb, row))
	}
	return r
}

// Impose claims that metaharness imposed row, and how.
func (c *Claim) Impose(row RowID, how string) { c.put(row, imposed, how) }

// Unavailable claims that row could not be imposed, and why.
func (c *Claim) Unavailable(row RowID, why string) { c.put(row, unavailable, why) }

// Declare claims what the caller declared of row (H7 under --scratch-cwd).
func (c *Claim) Declare(row RowID, what string) { c.put(row, declared, what) }

// Enforce says how an imposed row is enforced besides the launch itself
// (the confinement's words), after what the launch said. A row the launch
// claimed unavailable or declared stays as it was: nothing imposed it, so
// nothing enforces it.
func (c *Claim) Enforce(row RowID, how string) {
	if r := c.claimedRow(row, "enforce"); r.state == imposed {
		r.words += "; " + how
	}
}

// Add appends words to row in whatever state it was claimed.
func (c *Claim) Add(row RowID, words string) {
	c.claimedRow(row, "add").words += words
}

// Withdraw takes an imposition back: the row becomes unavailable for why,
// keeping the launch's own words after it. A row claimed otherwise is left
// as it is.
func (c *Claim) Withdraw(row RowID, why string) {
	r := c.claimedRow(row, "withdraw")
	if r.state != imposed {
		return
	}
	c.changes++
	r.state, r.words, r.since = unavailable, why+" (the launch itself: "+r.words+")", c.changes
}

// Held is how the child holds its credential under c, the opening of H4's
// claim in the words every kind shares; a kind appends its own specifics.
// variable is the child's variable that holds the key (api-key) or the
// placeholder (loopback), "" not to name it. c is one a kind builds: none,
// api-key or loopback.
func (c Credentials) Held(variable string) string {
	switch c {
	case CredentialsAPIKey:
		return variable + " is in the child's environment because --credentials api-key declared it"
	case CredentialsLoopback:
		if variable != "" {
			variable = " in " + variable
		}
		return "the child holds a per-run placeholder" + variable + " and no credential; the loopback proxy attaches the real token on the way out"
	case CredentialsNone:
		return "no credential reaches the child (--credentials none)"
	}
	panic(fmt.Sprintf("attest: no launch holds a credential under --credentials %s", c))
}

// Ambient adds an input the run has that no row covers, once.
func (c *Claim) Ambient(in string) {
	if !slices.Contains(c.ambient, in) {
		c.ambient = append(c.ambient, in)
	}
}

// Attestation is the claim as session.started.hermetic carries it: the
// imposed rows in report order, the others in the order they came to be
// unavailable or declared (a withdrawn row last).
func (c *Claim) Attestation() record.Attestation {
	a := record.Attestation{Mode: c.mode, Decisions: c.decisions, AmbientInputs: slices.Clone(c.ambient)}
	rows := slices.Collect(maps.Keys(c.rows))
	sort.Slice(rows, func(i, j int) bool { return c.rows[rows[i]].since < c.rows[rows[j]].since })
	for _, row := range rows {
		r := c.rows[row]
		switch r.state {
		case imposed:
			a.Imposed = append(a.Imposed, record.RowHow{Row: row.id, How: r.words})
		case unavailable:
			a.Unavailable = append(a.Unavailable, record.RowWhy{Row: row.id, Why: r.words})
		case declared:
			a.Declared = append(a.Declared, record.RowWhat{Row: row.id, What: r.words})
		}
	}
	sort.SliceStable(a.Imposed, func(i, j int) bool { return rowOrder(a.Imposed[i].Row) < rowOrder(a.Imposed[j].Row) })
	return a
}

// The states a claim puts a row in, as Claimed names them.
const (
	ClaimImposed     = "imposed"
	ClaimEnforced    = "enforced"
	ClaimDeclared    = "declared"
	ClaimUnavailable = "unavailable"
)

// Claimed is how att claims row, and in which words: unavailable, declared,
// imposed, or enforced, an imposed row whose words say that the
// confinement enforces it in the kernel (the words Enforce adds begin
// "enforced" or "in the kernel:"); "" when att does not claim it. A row
// listed twice reads as the floor judges it, unavailable first.
func Claimed(att *record.Attestation, row RowID) (state, words string) {
	st := stateOf(att, row)
	switch {
	case st.unavailable != nil:
		return ClaimUnavailable, st.unavailable.Why
	case st.imposed != nil:
		for _, clause := range strings.Split(st.imposed.How, "; ") {
			if strings.HasPrefix(clause, "enforced") || strings.HasPrefix(clause, "in the kernel:") {
				return ClaimEnforced, st.imposed.How
			}
		}
		return ClaimImposed, st.imposed.How
	case st.declared != nil:
		return ClaimDeclared, st.declared.What
	}
	return "", ""
}
