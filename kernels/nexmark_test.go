package kernels_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/examples"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/window"
)

// nexmarkStateless are the Nexmark queries of examples/nexmark that are one
// stateless kernel over the bid stream.
var nexmarkStateless = []string{"q0", "q1", "q2", "q14", "q21", "q22"}

var (
	nexmarkOnce   sync.Once
	nexmarkBundle *nexmark.Bundle
)

// nexmarkBids is a task of 256 KiB of the bid stream's tuples, as the
// generator makes them (their long strings in the bundle's memory).
func nexmarkBids(t testing.TB) []byte {
	nexmarkOnce.Do(func() {
		b, err := nexmark.NewBundle(nexmark.DefaultConfig(), 200_000)
		if err != nil {
			panic(err)
		}
		nexmarkBundle = b
	})
	bids := nexmarkBundle.Tuples(nexmark.BidTable)
	n := (256 << 10) / nexmark.BidTupleSize * nexmark.BidTupleSize
	require.GreaterOrEqual(t, len(bids), n)
	return bids[:n]
}

// nexmarkQuery is the query of examples/nexmark/name.sql that reads the
// bids (the program's last).
func nexmarkQuery(t testing.TB, name string) *query.Query {
	text, err := examples.FS.ReadFile("nexmark/" + name + ".sql")
	require.NoError(t, err)
	prog, err := sql.Compile(string(text))
	require.NoError(t, err)
	q := prog.Queries[len(prog.Queries)-1].Spec.Query
	require.NotNil(t, q, name)
	return q
}

// TestNexmarkKernelsDoNotAllocate: a task of bids through the stateless
// Nexmark queries' kernels allocates nothing in steady state.
func TestNexmarkKernelsDoNotAllocate(t *testing.T) {
	task := nexmarkBids(t)
	for _, name := range nexmarkStateless {
		plan, err := kernels.Compile(nexmarkQuery(t, name))
		require.NoError(t, err, name)
		k := plan.NewKernel()
		var r window.TaskResult
		run := func() {
			r.Reset(plan.Layout)
			k.Process(task, 0, &r)
		}
		run()
		run()
		assert.Zero(t, testing.AllocsPerRun(10, run), name)
		assert.Equal(t, uint64(len(task)/plan.TupleSize), r.Tuples, name)
	}
}

// BenchmarkNexmarkKernels: one worker's kernel alone on a task of bids, for
// the stateless Nexmark queries (ns/op is per task of 3276 bids).
func BenchmarkNexmarkKernels(b *testing.B) {
	task := nexmarkBids(b)
	for _, name := range nexmarkStateless {
		b.Run(name, func(b *testing.B) { benchKernel(b, nexmarkQuery(b, name), task) })
	}
}

// benchKernel runs one kernel of q over task per op, reporting bytes/s,
// allocations and the time per tuple.
func benchKernel(b *testing.B, q *query.Query, task []byte) {
	benchKernelWith(b, q, task, kernels.Options{})
}

func benchKernelWith(b *testing.B, q *query.Query, task []byte, o kernels.Options) {
	plan, err := kernels.CompileWith(q, o)
	require.NoError(b, err)
	k := plan.NewKernel()
	var r window.TaskResult
	b.SetBytes(int64(len(task)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(plan.Layout)
		k.Process(task, 0, &r)
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(len(task)/plan.TupleSize), "ns/tuple")
}
