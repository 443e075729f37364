package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/workloads"
)

// BenchmarkMinMaxFloat: float MIN and MAX (window.MinF, MaxF) folded by
// the vectorised kernel over cm1's stream, grouped by a dense key
// (category) and a hashed one (jobId).
func BenchmarkMinMaxFloat(b *testing.B) {
	for _, key := range []string{"category", "jobId"} {
		b.Run(key, func(b *testing.B) {
			w, err := workloads.Lookup("cm1")
			require.NoError(b, err)
			p := workloads.DefaultParams()
			q, err := w.Build(p)
			require.NoError(b, err)
			q.GroupBy = []query.Expr{query.C(key)}
			q.Aggregates = []query.Aggregate{
				{Func: query.Min, Arg: query.C("cpu"), As: "mn"},
				{Func: query.Max, Arg: query.C("ram"), As: "mx"},
			}
			gen, err := w.NewGenerator(p)
			require.NoError(b, err)
			ts := q.Schema.TupleSize
			task := make([]byte, (256<<10)/ts*ts)
			gen.Fill(task, 0)
			benchKernelWith(b, q, task, kernels.Options{Vectorised: true})
		})
	}
}
