package kernels

// PairLoop reports whether the join's WHERE runs in the specialised pair
// loop, and with how many cross terms.
func (wj *WindowJoin) PairLoop() (special bool, cross int) {
	return wj.plan.special, len(wj.plan.cross)
}

// Lent is how many output buffers Next handed out that Recycle has not
// taken back to their scratch.
func (wj *WindowJoin) Lent() int { return wj.lent }

// Buffers is how many output buffers the scratch keeps.
func (s *JoinScratch) Buffers() int { return len(s.free) }

// NoBatch makes every window a task of its own.
func (wj *WindowJoin) NoBatch() { wj.noBatch = true }
