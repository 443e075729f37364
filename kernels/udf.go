package kernels

import "github.com/saber-hx/saber-hx/query"

// scalarFuncCall calls a function registered with query.RegisterFunc over
// non-NULL arguments of types (rowCall's strict wrapper answers NULL for
// the others). Its argument slice is the node's own, reused row after row;
// a string result is copied into the chunk's scratch.
func scalarFuncCall(f query.ScalarFunc, types []query.ValueType) func(vs []rval, sc *rowScratch) rval {
	in := make([]query.Scalar, len(f.Args))
	toFloat := make([]bool, len(f.Args))
	for i, t := range f.Args {
		toFloat[i] = t == query.FloatValue && i < len(types) && types[i] != query.FloatValue
	}
	str := f.Result == query.StringValue
	return func(vs []rval, sc *rowScratch) rval {
		for i, v := range vs {
			in[i] = query.Scalar{I: v.i, F: v.f, S: v.s}
			if toFloat[i] {
				in[i].F = float64(v.i)
			}
		}
		out := f.Fn(in)
		switch {
		case out.Null:
			return rnull
		case str:
			return rval{s: append(sc.str(len(out.S)), out.S...)}
		}
		return rval{i: out.I, f: out.F}
	}
}
