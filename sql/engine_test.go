package sql

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/workloads"
	"github.com/saber-hx/saber-hx/ysb"
)

// output is what one spec of an engine run emitted.
type output struct {
	Rows   []reference.Row
	Tuples []byte
	Counts [7]uint64 // tuples, filtered, unmatched, late, counted, windows, rows
}

// sameRow: a and b are equal, as assert.Equal (reflect.DeepEqual) finds
// them.
func sameRow(a, b reference.Row) bool {
	return a.Start == b.Start && a.End == b.End && a.Key == b.Key && slices.Equal(a.Values, b.Values) && (a.Values == nil) == (b.Values == nil)
}

// feed is the input of one spec: Stream(i) and, for a join, its Right().
type feed struct{ left, right []byte }

// runEngine runs specs on one worker (so that float sums add up in one
// order) and returns each spec's output.
func runEngine(t *testing.T, specs []engine.Spec, feeds []feed) []*output {
	t.Helper()
	return runEngineTasks(t, specs, feeds, 1<<14)
}

// runEngineTasks is runEngine with tasks of taskSize bytes.
func runEngineTasks(t *testing.T, specs []engine.Spec, feeds []feed, taskSize int) []*output {
	t.Helper()
	outs := make([]*output, len(specs))
	for i := range specs {
		o := &output{}
		outs[i] = o
		specs[i].Tuples = func(b []byte) error { o.Tuples = doubling.Append(o.Tuples, b...); return nil }
		if q := specs[i].Query; q != nil && !q.Stateless() {
			q := q
			specs[i].Windows = func(w *engine.Window) error {
				// The window's rows' values in one slice: sg2's and
				// lrb1's 100,000 rows each grew a slice of their own.
				na := len(q.Aggregates)
				vals := make([]reference.Value, 0, w.Rows()*na)
				for r := range w.Rows() {
					row := reference.Row{Start: w.Start, End: w.End, Key: string(w.Key(r))}
					for a := range na {
						if w.AggIsFloat(a) {
							vals = append(vals, reference.Float(w.AggFloat(r, a)))
						} else {
							vals = append(vals, reference.Int(w.Agg(r, a)))
						}
					}
					if na > 0 {
						row.Values = vals[len(vals)-na : len(vals) : len(vals)]
					}
					o.Rows = doubling.Append(o.Rows, row)
				}
				return nil
			}
		}
	}
	cfg := engine.Config{Workers: 1, TaskSize: taskSize, BufferSize: 1 << 20}
	eng, err := engine.Start(cfg, specs)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(feeds))
	for i, f := range feeds {
		for k, data := range [][]byte{f.left, f.right} {
			if data == nil {
				continue
			}
			s := eng.Stream(i)
			if k == 1 {
				s = s.Right()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.Write(data)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	stats, err := eng.CloseAll()
	require.NoError(t, err)
	for i, st := range stats {
		outs[i].Counts = [7]uint64{st.Tuples, st.Filtered, st.Unmatched, st.Late, st.Counted, st.Windows, st.Rows}
	}
	return outs
}

func compileFile(t *testing.T, name string) (*Program, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	require.NoError(t, err)
	p, err := Compile(string(b))
	if e, ok := err.(*Error); ok {
		require.NoError(t, err, e.Caret(string(b)))
	}
	require.NoError(t, err)
	return p, string(b)
}

// TestYSBMatchesGoQuery: examples/ysb.sql (the goal text of issue 16)
// gives exactly ysb.Query's windows and rows on generated YSB data.
func TestYSBMatchesGoQuery(t *testing.T) {
	p, _ := compileFile(t, "ysb.sql")
	require.Len(t, p.Queries, 1)
	gen, err := ysb.NewGenerator(ysb.DefaultGenConfig())
	require.NoError(t, err)
	camp := gen.Campaigns()
	var csv bytes.Buffer
	require.NoError(t, camp.WriteCSV(&csv))
	tab := p.Table("campaigns")
	require.NotNil(t, tab)
	require.NoError(t, tab.LoadCSV(&csv))
	assert.Equal(t, len(camp.AdIDs), tab.Rows())

	data := make([]byte, 250_000*ysb.TupleSize) // 25 s: three windows
	gen.Fill(data, 0)
	got := runEngine(t, p.Specs(), []feed{{left: data}})
	want := runEngine(t, []engine.Spec{{Query: ysb.Query(camp, ysb.WindowMs)}}, []feed{{left: data}})
	require.NotEmpty(t, want[0].Rows)
	assert.Equal(t, want[0].Rows, got[0].Rows)
	assert.Equal(t, want[0].Tuples, got[0].Tuples)
	assert.Equal(t, want[0].Counts, got[0].Counts)

	q := p.Queries[0]
	assert.Equal(t, "events", q.Input)
	assert.Equal(t, []string{"window_start", "campaign_id", "count", "max_event_time"}, columnNamesOf(q))
	assert.Equal(t, &Sink{Connector: "stdout", Format: "csv", Options: map[string]string{}}, q.Sink)
	src := p.Source("events")
	assert.Equal(t, "file", src.Connector)
	assert.Equal(t, "events.bin", src.Path)
	assert.Equal(t, "binary", src.Format)
	assert.Equal(t, "ms", src.TimeUnit)
	assert.NoError(t, query.SameLayout(src.Schema, ysb.Schema()))
	assert.Equal(t, "campaigns.csv", tab.Path)
	assert.True(t, tab.Header)
}

func columnNamesOf(q *Query) []string {
	n := make([]string, len(q.Columns))
	for i, c := range q.Columns {
		n[i] = c.Name
	}
	return n
}

// TestExamplesMatchWorkloads: every SABER workload written in SQL
// (examples/*.sql) gives exactly the Go-built workload's output (windows,
// rows, output tuples and counters) on the same generated input.
func TestExamplesMatchWorkloads(t *testing.T) {
	for _, tc := range []struct {
		file, workload string
		tuples         int
	}{
		{"cm1.sql", "cm1", 30_000},
		{"cm2.sql", "cm2", 30_000},
		{"sg1.sql", "sg1", 16_000},
		{"sg2.sql", "sg2", testenv.Scale(30, 80)}, // each tuple in thousands of sliding windows
		{"lrb1.sql", "lrb1", 30_000},
		{"groupby.sql", "groupby", 50_000},
		{"agg.sql", "agg", 20_000},
		{"proj.sql", "proj", 20_000},
		{"select.sql", "select", 20_000},
		{"join.sql", "join", 4_096},
		{"sg3.sql", "sg3", testenv.Scale(30, 80)},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			p, _ := compileFile(t, tc.file)
			w, err := workloads.Lookup(tc.workload)
			require.NoError(t, err)
			params := workloads.DefaultParams()
			gen, err := w.NewGenerator(params)
			require.NoError(t, err)
			left := make([]byte, tc.tuples*w.Schema.TupleSize)
			gen.Fill(left, 0)
			params.Seed++
			gen2, err := w.NewGenerator(params)
			require.NoError(t, err)
			right := make([]byte, len(left))
			gen2.Fill(right, 0)
			params.Seed--

			var goSpecs []engine.Spec
			var goFeeds []feed
			if w.Parts != nil {
				parts, err := w.Parts(params)
				require.NoError(t, err)
				for _, pt := range parts {
					goSpecs = append(goSpecs, engine.Spec{Query: pt.Query, Join: pt.Join, Upstream: pt.Upstream, UpstreamRight: pt.UpstreamRight})
					var f feed
					if pt.Input {
						f.left = left
					}
					if pt.InputRight {
						f.right = right
					}
					goFeeds = append(goFeeds, f)
				}
			} else {
				q, err := w.Build(params)
				require.NoError(t, err)
				goSpecs, goFeeds = []engine.Spec{{Query: q}}, []feed{{left: left}}
			}
			// The SQL's first source is the generator's stream, a second
			// one the stream of the next seed.
			data := map[string][]byte{}
			for i, s := range p.Sources {
				assert.Equal(t, "generator", s.Connector)
				assert.Equal(t, tc.workload, s.Workload)
				data[s.Name] = [][]byte{left, right}[i]
				if i == 1 { // the second stream's seed, as the test generates it
					assert.Equal(t, params.Seed+1, s.Seed)
				}
			}
			sqlFeeds := make([]feed, len(p.Queries))
			for i, q := range p.Queries {
				sqlFeeds[i] = feed{left: data[q.Input], right: data[q.InputRight]}
			}
			require.Len(t, p.Queries, len(goSpecs))
			want := runEngine(t, goSpecs, goFeeds)
			got := runEngine(t, p.Specs(), sqlFeeds)
			for i := range want {
				t.Logf("query %d: %d rows, %d tuple bytes, counts %v", i, len(got[i].Rows), len(got[i].Tuples), got[i].Counts)
				require.False(t, len(want[i].Rows) == 0 && len(want[i].Tuples) == 0, "query %d has no output", i)
				if !slices.EqualFunc(want[i].Rows, got[i].Rows, sameRow) { // where reflection over every row cost more than the run
					assert.Equal(t, want[i].Rows, got[i].Rows, "query %d", i)
				}
				assert.True(t, bytes.Equal(want[i].Tuples, got[i].Tuples), "query %d: output tuples differ (%d bytes, want %d)", i, len(got[i].Tuples), len(want[i].Tuples))
				assert.Equal(t, want[i].Counts, got[i].Counts, "query %d", i)
			}
		})
	}
}
