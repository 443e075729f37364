package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/window"
)

// TestMemoMatchesReference: a projection that calls the regular expression
// its WHERE calls (Nexmark q21's shape) reads WHERE's values, and its rows
// are the reference evaluator's: over several chunks, one of which WHERE's
// cheap term passes whole (so that the expression's term runs on none of
// it, and the stamps of the chunk before are stale), NULL extractions, and
// a second call of another group that WHERE does not make.
func TestMemoMatchesReference(t *testing.T) {
	const ts = 40 // u string at 8, a int64 at 24
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "u", Type: query.String, Offset: 8},
		query.Attribute{Name: "a", Type: query.Int64, Offset: 24})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(8, 88))
	const n = 3000
	var arena strview.Arena
	defer arena.Free()
	data := make([]byte, n*ts)
	for i := range n {
		tu := data[i*ts : (i+1)*ts]
		binary.LittleEndian.PutUint64(tu, uint64(i))
		u := fmt.Sprintf("https://x.com/p/item.htm?query=%d", r.IntN(100))
		switch r.IntN(3) {
		case 0:
			u += fmt.Sprintf("&channel_id=%d", r.IntN(1000))
		case 1:
			u = fmt.Sprintf("channel_id=%d&z=1", r.IntN(1000))
		}
		strview.Put(tu[8:24], []byte(u), &arena)
		a := r.Int64N(10)
		if i >= chunk && i < 2*chunk {
			a = 6 + r.Int64N(4) // `a > 5` holds for the whole second chunk
		}
		binary.LittleEndian.PutUint64(tu[24:], uint64(a))
	}
	extract := func(g int64) query.Expr {
		return query.Call{Fn: "regexp_extract", Args: []query.Expr{query.C("u"), query.Str("(&|^)channel_id=([^&]*)"), query.Int(g)}}
	}
	q := &query.Query{Name: "q21", Schema: s,
		Where: query.Or(query.IsNull{X: extract(2), Not: true}, query.Compare{Op: query.Gt, L: query.C("a"), R: query.Int(5)}),
		Project: []query.Projection{
			{Expr: query.Case{Whens: []query.When{{Cond: query.Compare{Op: query.Gt, L: query.C("a"), R: query.Int(7)}, Then: query.Str("big")}},
				Else: extract(2)}, As: "c"},
			{Expr: extract(2), As: "id"},
			{Expr: extract(1), As: "head"},
			{Expr: query.C("a"), As: "a"},
		}}
	plan, err := Compile(q)
	require.NoError(t, err)
	k, ok := plan.NewKernel().(*statelessKernel)
	require.True(t, ok, "a stateless kernel")
	require.NotNil(t, k.memo, "WHERE's REGEXP_EXTRACT linked to the projection's")
	require.Len(t, k.memo.regs, 1, "only the call both make")

	want, got := statelessRows(t, plan, k, data, 0)
	assert.Equal(t, want, got)
	assert.Positive(t, k.memo.hits, "the projection read WHERE's values")
}

// statelessRows runs the stateless kernel k of plan over data, in tasks of
// task tuples (all of data where 0), and returns the rows the reference
// evaluator gives and those k wrote, as text.
func statelessRows(t *testing.T, plan *Plan, k Kernel, data []byte, task int) (want, got [][]string) {
	t.Helper()
	q := plan.Query
	s := q.Schema
	ts := s.TupleSize
	out, err := q.OutputSchema()
	require.NoError(t, err)
	for i := range len(data) / ts {
		tu := data[i*ts : (i+1)*ts]
		if q.Where != nil {
			w, err := reference.Eval(q.Where, s, tu)
			require.NoError(t, err)
			if w.Null || w.I == 0 {
				continue
			}
		}
		row := []string{fmt.Sprint(int64(binary.LittleEndian.Uint64(tu)))}
		for _, p := range q.Project {
			v, err := reference.Eval(p.Expr, s, tu)
			require.NoError(t, err)
			row = append(row, v.Text())
		}
		want = append(want, row)
	}
	var res window.TaskResult
	res.Reset(plan.Layout)
	if task == 0 {
		task = len(data) / ts
	}
	for at := 0; at < len(data); at += task * ts {
		k.Process(data[at:min(len(data), at+task*ts)], 0, &res)
	}
	for o := 0; o < len(res.Out); o += out.TupleSize {
		tu := res.Out[o : o+out.TupleSize]
		row := []string{fmt.Sprint(int64(binary.LittleEndian.Uint64(tu)))}
		for _, a := range out.Attrs[1:] {
			switch {
			case a.Nullable && a.IsNull(tu):
				row = append(row, "NULL")
			case a.Type == query.String:
				row = append(row, string(strview.Bytes(tu[a.Offset:a.Offset+strview.Size])))
			case a.Type == query.Float64:
				row = append(row, fmt.Sprint(math.Float64frombits(binary.LittleEndian.Uint64(tu[a.Offset:]))))
			default:
				row = append(row, fmt.Sprint(int64(binary.LittleEndian.Uint64(tu[a.Offset:]))))
			}
		}
		got = append(got, row)
	}
	return want, got
}
