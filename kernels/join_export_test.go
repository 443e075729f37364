package kernels

// PairLoop reports whether the join's WHERE runs in the specialised pair
// loop, and with how many cross terms.
func (wj *WindowJoin) PairLoop() (special bool, cross int) {
	return wj.plan.special, len(wj.plan.cross)
}
