package engine

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestWorkClockNesting: a frame nested in a serial section counts for its
// own query and not in the section; a section nested in another of the
// same frame counts once; a section outside every frame is worker time
// too.
func TestWorkClockNesting(t *testing.T) {
	var outer, inner serialClock
	w := &worker{}
	const d = 20 * time.Millisecond
	start := time.Now()
	f := w.beginFrame()
	sc := w.beginSerial()
	time.Sleep(d) // serial, outer's
	nested := w.beginSerial()
	time.Sleep(d) // still outer's serial, counted once
	g := w.beginFrame()
	time.Sleep(4 * d) // inner's work, not outer's
	w.endFrame(g, &inner)
	w.endSerial(nested, &outer)
	w.endSerial(sc, &outer)
	w.endFrame(f, &outer)
	total := time.Since(start)

	// A loaded machine may oversleep any of the sleeps: outer's times are
	// bounded by the whole less inner's work, not by the sleeps asked.
	serial, work := outer.times()
	iserial, iwork := inner.times()
	assert.GreaterOrEqual(t, serial, 2*d)
	assert.LessOrEqual(t, serial, total-iwork, "the nested frame is not outer's")
	assert.GreaterOrEqual(t, work, serial)
	assert.LessOrEqual(t, work, total-iwork, "nor outer's work")
	assert.Zero(t, iserial)
	assert.GreaterOrEqual(t, iwork, 4*d)
	assert.Zero(t, w.clk.frames)
	assert.Zero(t, w.clk.serial)

	// Outside every frame (CloseAll's helper between two steps), and with
	// no worker (after the workers stopped): serial and worker time.
	var c serialClock
	sc = w.beginSerial()
	time.Sleep(d)
	w.endSerial(sc, &c)
	var none *worker
	sc = none.beginSerial()
	time.Sleep(d)
	none.endSerial(sc, &c)
	serial, work = c.times()
	assert.GreaterOrEqual(t, serial, 2*d)
	assert.Equal(t, serial, work)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		f := w.beginFrame()
		sc := w.beginSerial()
		w.endSerial(sc, &c)
		w.endFrame(f, &c)
	}))
}

// TestSerialFraction: a query whose ordered stage is forced heavy (a sink
// that takes its time per window) reports a larger serial fraction than a
// stateless one beside it and than a join; every fraction lies in [0, 1]
// and its times add up to no more than the run's worker time.
func TestSerialFraction(t *testing.T) {
	base := runtime.NumGoroutine()
	s := randSchema(t)
	heavy := &query.Query{Name: "heavy", Schema: s, Window: query.Sliding(40, 10),
		GroupBy:    []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}}}
	light := &query.Query{Name: "light", Schema: s, Where: query.ColLt("a", 3)}
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(40, 10),
		Where: query.Cmp(query.C("l.a"), query.Lt, query.C("r.a"))}
	slow := func(*Window) error {
		for t0 := time.Now(); time.Since(t0) < 200*time.Microsecond; {
		}
		return nil
	}
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * 64, BufferSize: 1 << 14}, []Spec{
		{Query: heavy, Windows: slow},
		{Query: light, Tuples: func([]byte) error { return nil }},
		{Join: j, Tuples: func([]byte) error { return nil }},
	})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	data := randData(r, 20000)
	errs := make(chan error, 4)
	go func() { errs <- e.Stream(0).Write(data) }()
	go func() { errs <- e.Stream(1).Write(data) }()
	go func() { errs <- e.Stream(2).Write(data[:len(data)/4]) }()
	go func() { errs <- e.Stream(2).Right().Write(data[len(data)/4 : len(data)/2]) }()
	for range 4 {
		require.NoError(t, <-errs)
	}
	stats, err := e.CloseAll()
	require.NoError(t, err)
	for _, st := range stats {
		assert.Positive(t, st.WorkerTime, st.Query)
		assert.LessOrEqual(t, st.SerialTime, st.WorkerTime, st.Query)
		f := st.SerialFraction()
		assert.GreaterOrEqual(t, f, 0.0, st.Query)
		assert.LessOrEqual(t, f, 1.0, st.Query)
	}
	h, l := stats[0].SerialFraction(), stats[1].SerialFraction()
	assert.Greater(t, h, l, "the heavy ordered stage against a stateless query's")
	// Most of it: the race detector slows the rest down too.
	assert.Greater(t, h, 0.3, "the sink's time is the heavy query's serial time")
	m := e.Stream(0).Metrics()
	assert.Equal(t, stats[0].SerialTime, m.SerialTime)
	assert.Equal(t, stats[0].WorkerTime, m.WorkerTime)
	mj := e.Stream(2).Metrics()
	assert.Equal(t, stats[2].SerialTime, mj.SerialTime, "a join's: its inputs' together")
	assert.Equal(t, stats[2].WorkerTime, mj.WorkerTime)
	assert.Equal(t, Stats{}.SerialFraction(), 0.0, "no worker time")
	assertNoLeak(t, base)
}

// TestFedRegularJoinCountsItsPairs: a regular join whose sides two filters
// feed from their result stages (joinFeed) makes its pairs on the
// workers, in Cut, as the filters' tasks finish: that is the join's work,
// on its clock, not the filters'. Counted on the filters', the join's
// own worker time was only its ordered hand-off, and its serial fraction
// read about 1 (SQL's join of a view: "select1$2 ... serial fraction
// 0.997").
func TestFedRegularJoinCountsItsPairs(t *testing.T) {
	base := runtime.NumGoroutine()
	j := regJoin(t)
	s := j.Left
	lq := &query.Query{Name: "lq", Schema: s, Where: query.Cmp(query.C("a"), query.Lt, query.Int(100))}
	rq := &query.Query{Name: "rq", Schema: s, Where: query.Cmp(query.C("a"), query.Lt, query.Int(100))}
	r := rand.New(rand.NewPCG(7, 26))
	left, right := randData(r, 1500), randData(r, 1500) // 7 keys: about 10^5 pairs
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * 64, BufferSize: 1 << 14}, []Spec{
		{Query: lq}, {Query: rq},
		{Join: j, Upstream: Output(0), UpstreamRight: Output(1), Tuples: func([]byte) error { return nil }},
	})
	require.NoError(t, err)
	require.NotNil(t, e.Stream(0).joinFeed, "the left filter feeds the join")
	require.NotNil(t, e.Stream(1).joinFeed, "the right filter feeds the join")
	errs := make(chan error, 2)
	go func() { errs <- e.Stream(0).Write(left) }()
	go func() { errs <- e.Stream(1).Write(right) }()
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	stats, err := e.CloseAll()
	require.NoError(t, err)
	require.Greater(t, stats[2].Rows, uint64(50_000), "pairs")
	filters := stats[0].WorkerTime + stats[1].WorkerTime
	assert.Greater(t, stats[2].WorkerTime, filters, "the pairs are the join's work, not its feeders'")
	assert.Less(t, stats[2].SerialFraction(), 0.5, "serial %v of %v", stats[2].SerialTime, stats[2].WorkerTime)
	assertNoLeak(t, base)
}
