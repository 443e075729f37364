package engine_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// The README's "A query of your own", compiled and run: sensors whose
// readings run hot, per 60 s window slid by 1 s.
func Example() {
	s, err := query.NewSchema(32,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "sensor", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "kind", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "value", Type: query.Float64, Offset: 16},
	)
	if err != nil {
		panic(err)
	}
	q := &query.Query{
		Name:    "hot-sensors",
		Schema:  s,
		Window:  query.Sliding(60_000, 1_000), // 60 s every 1 s
		Where:   query.Or(query.ColEq("kind", 1), query.Cmp(query.C("value"), query.Gt, query.Float(100))),
		GroupBy: []query.Expr{query.C("sensor")},
		Aggregates: []query.Aggregate{
			{Func: query.Count, As: "n"},
			{Func: query.Avg, Arg: query.Mul(query.C("value"), query.Float(1.8)), As: "avg_f"},
		},
		Having: query.Cmp(query.C("avg_f"), query.Gt, query.Float(50)),
	}
	windows := 0
	eng, err := engine.Start(engine.Config{Workers: 2, TaskSize: 1 << 12, BufferSize: 1 << 16},
		[]engine.Spec{{Query: q, Windows: func(w *engine.Window) error {
			// Print the first window only: each of the 60 windows holding
			// the readings below has the same rows.
			if windows++; windows == 1 {
				for i := range w.Rows() {
					fmt.Println(w.Start, w.GroupInt(i, 0), w.Agg(i, 0), w.AggFloat(i, 1))
				}
			}
			return nil
		}}})
	if err != nil {
		panic(err)
	}
	// Three sensors, one reading each: sensor 1 of kind 1 (kept, avg_f 36 is
	// under 50: HAVING drops it), sensor 2 hot (kept), sensor 3 neither.
	tuples := make([]byte, 3*32)
	for i, r := range []struct {
		sensor, kind int32
		value        float64
	}{{1, 1, 20}, {2, 0, 150}, {3, 0, 10}} {
		t := tuples[i*32:]
		binary.LittleEndian.PutUint64(t[0:], uint64(500+i))
		binary.LittleEndian.PutUint32(t[8:], uint32(r.sensor))
		binary.LittleEndian.PutUint32(t[12:], uint32(r.kind))
		binary.LittleEndian.PutUint64(t[16:], math.Float64bits(r.value))
	}
	if err := eng.Stream(0).Write(tuples); err != nil {
		panic(err)
	}
	if _, err := eng.CloseAll(); err != nil {
		panic(err)
	}
	fmt.Println(windows, "windows")
	// Output:
	// -59000 2 1 270
	// 60 windows
}

// Two queries chained by a typed edge: the second reads the first's output
// (engine.Output(0)), over the zero Config (the command line's defaults),
// fed by a producer that Produce runs (pinned where Config.PinIngest).
func ExampleOutput() {
	s, err := query.NewSchema(16,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "v", Type: query.Int64, Offset: 8},
	)
	if err != nil {
		panic(err)
	}
	big := &query.Query{Name: "big", Schema: s, Where: query.Cmp(query.C("v"), query.Gt, query.Int(10))}
	out, err := big.OutputSchema()
	if err != nil {
		panic(err)
	}
	count := &query.Query{Name: "count", Schema: out, Window: query.Tumbling(1000),
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	eng, err := engine.Start(engine.Config{}, []engine.Spec{
		{Query: big},
		{Query: count, Upstream: engine.Output(0), Windows: func(w *engine.Window) error {
			fmt.Println(w.Start, w.Agg(0, 0))
			return nil
		}},
	})
	if err != nil {
		panic(err)
	}
	tuples := make([]byte, 16*4)
	for i, v := range []int64{5, 20, 30, 1} {
		binary.LittleEndian.PutUint64(tuples[i*16:], uint64(i))
		binary.LittleEndian.PutUint64(tuples[i*16+8:], uint64(v))
	}
	if err := <-eng.Produce(func() error { return eng.Stream(0).Write(tuples) }); err != nil {
		panic(err)
	}
	if _, err := eng.CloseAll(); err != nil {
		panic(err)
	}
	fmt.Println(eng.SpecNames(), eng.StreamNames())
	// Output:
	// 0 2
	// [big count] [big count]
}
