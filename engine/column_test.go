package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestResultColumnsByName: result columns resolved once by name, before
// the first window, read the same values as the positional accessors:
// integer aggregates and GROUP BY values with Int, float aggregates with
// Float (not truncated, as Agg truncates them); unnamed aggregates by
// their output schema's names.
func TestResultColumnsByName(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	q := &query.Query{Name: "byname", Schema: s, Window: query.Sliding(40, 10), GroupBy: []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{
			{Func: query.Count, As: "n"}, {Func: query.Max, Arg: query.C("c"), As: "mx"},
			{Func: query.Avg, Arg: query.C("c"), As: "avg"}, {Func: query.Sum, Arg: query.C("y")},
		}}
	var cols map[string]ResultColumn
	var rows, floats int
	sink := func(w *Window) error {
		for i := range w.Rows() {
			rows++
			assert.Equal(t, w.GroupInt(i, 0), w.Int(i, cols["b"]))
			assert.Equal(t, w.Agg(i, 0), w.Int(i, cols["n"]))
			assert.Equal(t, w.Agg(i, 1), w.Int(i, cols["mx"]))
			assert.Equal(t, w.AggFloat(i, 2), w.Float(i, cols["avg"]))
			assert.Equal(t, w.AggFloat(i, 3), w.Float(i, cols["agg4"]))
			if f := w.Float(i, cols["agg4"]); f != float64(int64(f)) {
				floats++ // what Agg would have truncated
			}
		}
		return nil
	}
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * 50, BufferSize: 1 << 14}, []Spec{{Query: q, Windows: sink}})
	require.NoError(t, err)
	cols = map[string]ResultColumn{}
	for _, name := range []string{"b", "n", "mx", "avg", "agg4"} {
		c, err := e.Stream(0).Column(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, c.Name)
		assert.Equal(t, name == "avg" || name == "agg4", c.Float, name)
		cols[name] = c
	}
	require.NoError(t, e.Write(randData(rand.New(rand.NewPCG(3, 4)), 5000)))
	_, err = e.Close()
	require.NoError(t, err)
	assert.Positive(t, rows)
	assert.Positive(t, floats)
}

// TestResultColumnErrors: a name that is no result column is an error
// naming the valid ones; the window start, a bytes GROUP BY value and a
// stateless query's columns are refused with what to read instead; a
// column read with the wrong type, in another query's window, or
// unresolved, panics.
func TestResultColumnErrors(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	q := &query.Query{Name: "q", Schema: s, Window: query.Tumbling(10), GroupBy: []query.Expr{query.C("b"), query.C("k")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Avg, Arg: query.C("c")}}}
	other := &query.Query{Name: "other", Schema: s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	sel := &query.Query{Name: "sel", Schema: s, Where: query.ColGe("a", 0)}
	var panics []string
	try := func(f func()) {
		defer func() {
			if r := recover(); r != nil {
				panics = append(panics, r.(string))
			}
		}()
		f()
	}
	var n, avg, otherN ResultColumn
	sink := func(w *Window) error {
		if w.Rows() > 0 && len(panics) == 0 {
			try(func() { w.Float(0, n) })
			try(func() { w.Int(0, avg) })
			try(func() { w.Int(0, otherN) })
			try(func() { w.Int(0, ResultColumn{}) })
			_, err := w.Column("nope")
			assert.ErrorContains(t, err, `query "q" has no result column "nope" (valid: b, k, n, agg2)`)
		}
		return nil
	}
	e, err := Start(Config{Workers: 1, TaskSize: randTuple * 50, BufferSize: 1 << 14},
		[]Spec{{Query: q, Windows: sink}, {Query: other, Windows: func(*Window) error { return nil }},
			{Query: sel, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	st := e.Stream(0)
	n, err = st.Column("n")
	require.NoError(t, err)
	avg, err = st.Column("agg2")
	require.NoError(t, err)
	otherN, err = e.Stream(1).Column("n")
	require.NoError(t, err)
	for name, want := range map[string]string{
		"nope":      `query "q" has no result column "nope" (valid: b, k, n, agg2)`,
		"timestamp": `"timestamp" is the window's start: read Window.Start`,
		"k":         `GROUP BY value "k" is not an integer: read it with Window.Key`,
	} {
		_, err := st.Column(name)
		assert.ErrorContains(t, err, want, name)
	}
	_, err = e.Stream(2).Column("a")
	assert.ErrorContains(t, err, `query "sel" outputs tuples, not windows`)
	require.NoError(t, e.Write(randData(rand.New(rand.NewPCG(5, 6)), 2000)))
	_, err = e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, []string{
		`engine: Window.Float: query "q"'s result column "n" is an integer: read it with Int`,
		`engine: Window.Int: query "q"'s result column "agg2" is a float: read it with Float`,
		`engine: Window.Int: result column "n" of query "other" read in a window of query "q"`,
		`engine: Window.Int: an unresolved ResultColumn (resolve it with Column)`,
	}, panics)
}
