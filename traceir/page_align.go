package traceir

import (
	"fmt"
	"sort"
)

// How two runs' calls are lined up: step by step when both were driven
// through steps, else turn by turn when both record turns, else by the
// order the calls were made; within a step or a turn, by that order.
const (
	byOrder = iota
	byTurn
	byStep
)

// diffKind is how two aligned calls differ.
type diffKind uint8

const (
	same diffKind = iota
	onlyFirst
	onlySecond
	otherTool
	decisionChanged
	inputDiffers
)

var diffWords = [...]string{
	same: "", onlyFirst: "only in the first run", onlySecond: "only in the second run",
	otherTool: "another tool", decisionChanged: "decision changed", inputDiffers: "input differs",
}

// aligned is one row of the calls table: a group's header (a step or a
// turn, labelled per run) or one call per run (-1: none).
type aligned struct {
	header bool
	label  []string // a header's label per run
	cells  [2]int32
	diff   diffKind
	index  int // a call row's number on the page
}

// alignment lines up the page's runs' calls (one run: its calls in order,
// headed by their turns).
func alignment(views []*runView) (rows []aligned, by int) {
	by = byTurn
	if len(views) == 2 && len(views[0].steps) > 0 && len(views[1].steps) > 0 {
		by = byStep
	}
	for _, v := range views {
		if by == byTurn && len(v.turns) == 0 {
			by = byOrder
		}
	}
	if len(views) == 1 {
		rows := make([]aligned, 0, len(views[0].calls))
		for i := range views[0].calls {
			rows = append(rows, aligned{cells: [2]int32{int32(i), -1}, index: i + 1})
		}
		return rows, by
	}
	// Each run's calls in groups, keyed by step sequence or turn number.
	type group struct {
		key   int
		calls []int32
	}
	groupsOf := func(v *runView) []group {
		var out []group
		if by == byStep {
			out = append(out, group{key: -1})
			for i := range v.steps {
				out = append(out, group{key: i})
			}
		}
		for i, c := range v.calls {
			key := 0
			switch by {
			case byStep:
				key = int(c.step)
			case byTurn:
				key = int(c.turn)
			}
			k := sort.Search(len(out), func(j int) bool { return out[j].key >= key })
			if k == len(out) || out[k].key != key {
				out = append(out[:k], append([]group{{key: key}}, out[k:]...)...)
			}
			out[k].calls = append(out[k].calls, int32(i))
		}
		return out
	}
	ga, gb := groupsOf(views[0]), groupsOf(views[1])
	index := 0
	for i, j := 0, 0; i < len(ga) || j < len(gb); {
		var a, b *group
		switch {
		case j == len(gb) || i < len(ga) && ga[i].key < gb[j].key:
			a, i = &ga[i], i+1
		case i == len(ga) || gb[j].key < ga[i].key:
			b, j = &gb[j], j+1
		default:
			a, b, i, j = &ga[i], &gb[j], i+1, j+1
		}
		key := 0
		if a != nil {
			key = a.key
		} else {
			key = b.key
		}
		if h := header(views, by, key, a != nil, b != nil); h != nil {
			rows = append(rows, *h)
		}
		var ca, cb []int32
		if a != nil {
			ca = a.calls
		}
		if b != nil {
			cb = b.calls
		}
		for k := 0; k < max(len(ca), len(cb)); k++ {
			index++
			r := aligned{cells: [2]int32{-1, -1}, index: index}
			if k < len(ca) {
				r.cells[0] = ca[k]
			}
			if k < len(cb) {
				r.cells[1] = cb[k]
			}
			r.diff = compare(views, r.cells)
			rows = append(rows, r)
		}
	}
	return rows, by
}

// header is a group's header row, nil for the calls made before any step
// or turn.
func header(views []*runView, by, key int, inA, inB bool) *aligned {
	if by == byOrder || (by == byStep && key < 0) || (by == byTurn && key == 0) {
		return nil
	}
	h := &aligned{header: true}
	for i, v := range views {
		in := inA
		if i == 1 {
			in = inB
		}
		label := "no counterpart"
		switch {
		case by == byStep && key < len(v.steps):
			label = v.steps[key]
		case by == byTurn && in:
			label = fmt.Sprintf("turn %d", key)
		case by == byTurn && v.hasTurn(uint32(key)):
			label = fmt.Sprintf("turn %d (no call)", key)
		}
		h.label = append(h.label, label)
	}
	if h.label[0] != h.label[1] {
		h.diff = onlyFirst
	}
	return h
}

func (v *runView) hasTurn(n uint32) bool {
	for _, t := range v.turns {
		if t.turn == n {
			return true
		}
	}
	return false
}

func compare(views []*runView, cells [2]int32) diffKind {
	switch {
	case cells[1] < 0:
		return onlyFirst
	case cells[0] < 0:
		return onlySecond
	}
	a, b := views[0].calls[cells[0]], views[1].calls[cells[1]]
	switch {
	case a.name != b.name:
		return otherTool
	case a.dec != b.dec:
		return decisionChanged
	case a.input != b.input:
		return inputDiffers
	}
	return same
}

// maxCallRows bounds the calls a page lists one by one: past it, the first
// and the last are listed, and between them each call that was refused,
// failed or differs between the runs; what is left out is counted.
const (
	maxCallRows = 1000
	headCalls   = 300
	tailCalls   = 100
)

// notableRow is a call row a long page still lists.
func notableRow(views []*runView, r aligned) bool {
	if r.diff != same {
		return true
	}
	for i, v := range views {
		if c := r.cells[i]; c >= 0 && (v.calls[c].dec != allowed || v.calls[c].failed) {
			return true
		}
	}
	return false
}

// listed says which rows the calls table lists: all of them up to
// maxCallRows, else the first and last and the notable ones between.
func listed(views []*runView, rows []aligned) func(i int) bool {
	if len(rows) <= maxCallRows {
		return func(int) bool { return true }
	}
	return func(i int) bool {
		return i < headCalls || i >= len(rows)-tailCalls || !rows[i].header && notableRow(views, rows[i])
	}
}

// diffCounts sums how two runs' aligned calls differ.
func diffCounts(rows []aligned) map[diffKind]int {
	out := map[diffKind]int{}
	for _, r := range rows {
		if !r.header {
			out[r.diff]++
		}
	}
	return out
}
