package window

import (
	"fmt"
	"slices"
)

// AggKind says how one word of a group's aggregate row combines.
type AggKind uint8

const (
	AggAdd AggKind = iota + 1 // COUNT, SUM
	AggMin
	AggMax
)

// Layout is the shape of a GroupState: Groups dense group ordinals, and per
// group a row of int64 words. Word 0 is always the group's tuple count (it
// tells a group present, and serves COUNT); Kinds[i] combines word i+1.
type Layout struct {
	Groups int
	Kinds  []AggKind
}

// Words is the row width in int64 words.
func (l *Layout) Words() int { return 1 + len(l.Kinds) }

// GroupState holds aggregate rows for dense group ordinals and the list of
// ordinals touched since the last Reset, so that resetting and merging cost
// what was touched, not the number of groups.
//
// Kernels write rows directly (see Row): on the first tuple of a group
// (count word 0 == 0) they append the ordinal to Touched and initialise the
// row; afterwards they combine into it.
type GroupState struct {
	layout  *Layout
	words   int
	Vals    []int64
	Touched []int32
}

// NewGroupState allocates a zeroed state of layout l.
func NewGroupState(l *Layout) *GroupState {
	return &GroupState{
		layout:  l,
		words:   l.Words(),
		Vals:    make([]int64, l.Groups*l.Words()),
		Touched: make([]int32, 0, min(l.Groups, 1024)),
	}
}

// Layout returns the state's layout.
func (g *GroupState) Layout() *Layout { return g.layout }

// Row returns the words of group ordinal gr.
func (g *GroupState) Row(gr int32) []int64 {
	o := int(gr) * g.words
	return g.Vals[o : o+g.words : o+g.words]
}

// Reset zeroes the touched rows.
func (g *GroupState) Reset() {
	for _, gr := range g.Touched {
		clear(g.Row(gr))
	}
	g.Touched = g.Touched[:0]
}

// Empty reports whether no group was touched.
func (g *GroupState) Empty() bool { return len(g.Touched) == 0 }

// SortTouched orders Touched by ordinal, which is the order of the group keys.
func (g *GroupState) SortTouched() { slices.Sort(g.Touched) }

// Merge combines every touched row of src into g. Both must share a layout.
func (g *GroupState) Merge(src *GroupState) {
	if src.layout != g.layout {
		panic(fmt.Sprintf("window: merge of group states with different layouts (%p, %p)", src.layout, g.layout))
	}
	kinds := g.layout.Kinds
	for _, gr := range src.Touched {
		s := src.Row(gr)
		d := g.Row(gr)
		if d[0] == 0 {
			g.Touched = append(g.Touched, gr)
			copy(d, s)
			continue
		}
		d[0] += s[0]
		for i, k := range kinds {
			v := s[i+1]
			switch k {
			case AggAdd:
				d[i+1] += v
			case AggMin:
				d[i+1] = min(d[i+1], v)
			case AggMax:
				d[i+1] = max(d[i+1], v)
			}
		}
	}
}
