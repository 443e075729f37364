package kernels

import "github.com/saber-hx/saber-hx/window"

// paneCursor is the pane an aggregate kernel is filling. Tuples mostly
// arrive in pane order, so the kernel compares a tuple's position with the
// current pane's bounds and looks another pane up only when the tuple
// leaves it. The bounds are inclusive and saturated (window.Spec), so that
// the panes at both ends of int64 cost the loop nothing extra.
type paneCursor struct {
	cur         *window.GroupState
	pane        int64
	start, last int64 // positions [start, last]; empty (start > last) before the first tuple
	open        int64 // a tuple is late if the watermark before it is > open (spec.Open: the watermark delay folded in)
	lowest      int64 // spec.LowestPane(): panes below it are refused
	tuples      uint64

	// mapping, where not 0, has move take a new pane's fragment as a
	// direct table of slots slots (window.TaskResult.DirectFragment).
	mapping uint32
	slots   int
}

func newPaneCursor(spec window.Spec) paneCursor {
	return paneCursor{start: 1, last: 0, lowest: spec.LowestPane()}
}

// in reports whether position p is in the current pane.
func (c *paneCursor) in(p int64) bool { return p >= c.start && p <= c.last }

// move makes the pane of position p current. It reports false, leaving no
// pane current, where p is refused as bad input: its first window would
// start below math.MinInt64.
func (c *paneCursor) move(r *window.TaskResult, spec window.Spec, p int64) bool {
	c.flush(r)
	c.pane = spec.PaneOf(p)
	if c.pane < c.lowest {
		c.cur, c.start, c.last = nil, 1, 0
		return false
	}
	c.start = spec.PaneStart(c.pane)
	c.last = spec.PaneLast(c.pane)
	c.open = spec.Open(c.pane)
	if c.mapping != 0 {
		c.cur = r.DirectFragment(c.pane, c.slots, c.mapping)
	} else {
		c.cur = r.Fragment(c.pane)
	}
	return true
}

// flush counts the tuples aggregated into the current pane.
func (c *paneCursor) flush(r *window.TaskResult) {
	if c.cur != nil && c.tuples > 0 {
		r.AddTuples(c.pane, c.tuples)
	}
	c.tuples = 0
}
