package kernels

// NewHashedKernelForTest returns the aggregate kernel of the hashed
// layouts for p even where p's layout is dense (it runs those too, through
// its general passes): the oracle and the old figure of the dense kernel.
func NewHashedKernelForTest(p *Plan) (Kernel, error) {
	var where *vpred
	if p.Query.Where != nil {
		var err error
		if where, err = compilePred(p.Query.Where, p.Query.Schema); err != nil {
			return nil, err
		}
	}
	return newAggregateKernel(p, where)
}
