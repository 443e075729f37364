package kernels

import "github.com/saber-hx/saber-hx/window"

// paneCursor is the pane an aggregate kernel is filling. Tuples mostly
// arrive in pane order, so the kernel compares a tuple's position with the
// current pane's bounds and looks another pane up only when the tuple
// leaves it.
type paneCursor struct {
	cur        *window.GroupState
	pane       int64
	start, end int64 // positions [start, end); empty before the first tuple
	seal       int64 // a tuple is late if the watermark before it is >= seal
	tuples     uint64
}

func newPaneCursor() paneCursor { return paneCursor{start: 1, end: 0} }

// in reports whether position p is in the current pane.
func (c *paneCursor) in(p int64) bool { return p >= c.start && p < c.end }

// move makes the pane of position p current.
func (c *paneCursor) move(r *window.TaskResult, spec window.Spec, p int64) {
	c.flush(r)
	c.pane = spec.PaneOf(p)
	c.start = c.pane * spec.Pane
	c.end = c.start + spec.Pane
	c.seal = spec.Seal(c.pane)
	c.cur = r.Fragment(c.pane)
}

// flush counts the tuples aggregated into the current pane.
func (c *paneCursor) flush(r *window.TaskResult) {
	if c.cur != nil && c.tuples > 0 {
		r.AddTuples(c.pane, c.tuples)
	}
	c.tuples = 0
}
