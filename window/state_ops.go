package window

import "fmt"

// CopyFrom makes g an exact copy of src (same layout): afterwards g holds
// src's groups, with src's rows, in src's Touched order. It costs what src
// and g touched, not the number of groups. A hashed g adopts src's table
// size when it is smaller (allocating, only until the sizes settle), so that
// slots copy one to one; a larger hashed g rehashes src's rows into its own
// table instead.
func (g *GroupState) CopyFrom(src *GroupState) {
	if src.layout != g.layout {
		panic(fmt.Sprintf("window: copy of group states with different layouts (%p, %p)", src.layout, g.layout))
	}
	g.Reset()
	if g.layout.Hashed {
		if g.mask > src.mask || src.view {
			g.Merge(src)
			return
		}
		if g.mask < src.mask {
			n := int(src.mask + 1)
			g.Vals = make([]int64, n*g.words)
			g.Keys = make([]uint64, 2*n)
			g.mask = src.mask
		}
		for _, s := range src.Touched {
			g.Keys[2*s], g.Keys[2*s+1] = src.Keys[2*s], src.Keys[2*s+1]
		}
	}
	for _, s := range src.Touched {
		copyRow(g.Row(s), src.Row(s))
	}
	g.Touched = append(g.Touched, src.Touched...)
}
