package workloads

import (
	"encoding/binary"
	"fmt"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/ysb"
)

// The Yahoo Streaming Benchmark as a workload, so that it runs beside
// others (`saber-hx bench ysb,groupby`); `saber-hx ysb` is its own command
// with per-window validation against the generator. Data: package ysb's
// generator (the distribution of ../shared/anchors/ysb_cost.c), 100
// campaigns of 10 ads; the rate is 10 tuples per ms.
var ysbWorkload = &Workload{
	Name:               "ysb",
	Description:        "Yahoo Streaming Benchmark: views joined with 100 campaigns, COUNT and MAX(event_time) per campaign per 10 s window (128-byte tuples)",
	Schema:             ysb.Schema(),
	Windowed:           true,
	DefaultWindow:      query.Tumbling(ysb.WindowMs),
	DefaultTuplesPerMs: 10,
	ValidateTuples:     1000000,
}

func init() {
	ysbWorkload.Build = func(p Params) (*query.Query, error) {
		gen, err := newYSBGen(p)
		if err != nil {
			return nil, err
		}
		win, err := ysbWorkload.window(p)
		if err != nil {
			return nil, err
		}
		q := ysb.Query(gen.g.Campaigns(), win.Size)
		q.Window = win
		q.Schema = ysbWorkload.Schema
		return finish(ysbWorkload, q)
	}
	ysbWorkload.NewGenerator = func(p Params) (Generator, error) { return newYSBGen(p) }
	all = append(all, ysbWorkload)
}

type ysbGen struct {
	g      *ysb.Generator
	period uint64
}

func newYSBGen(p Params) (*ysbGen, error) {
	rate, err := ysbWorkload.rate(p)
	if err != nil {
		return nil, err
	}
	gc := ysb.DefaultGenConfig()
	gc.TuplesPerMs = int(rate)
	gc.Seed = p.Seed
	g, err := ysb.NewGenerator(gc)
	if err != nil {
		return nil, fmt.Errorf("ysb: %w", err)
	}
	return &ysbGen{g: g, period: uint64(ysb.BundleTuples(1, gc))}, nil
}

// Fill writes tuple k as the ysb generator's tuple k mod Period, with event
// time k / rate: the attributes the query reads are exactly the
// generator's (they repeat every Period tuples anyway), and user id, page
// id and ip repeat too, so that replaying a bundle continues the stream.
func (g *ysbGen) Fill(dst []byte, k0 uint64) {
	if len(dst)%ysb.TupleSize != 0 {
		panic(fmt.Sprintf("workloads: ysb: Fill of %d bytes, not a whole number of %d-byte tuples", len(dst), ysb.TupleSize))
	}
	rate := uint64(g.g.Config().TuplesPerMs)
	for off := 0; off < len(dst); {
		j := (k0 + uint64(off/ysb.TupleSize)) % g.period
		n := min(uint64(len(dst)-off), (g.period-j)*ysb.TupleSize)
		part := dst[off : off+int(n)]
		g.g.Fill(part, j)
		k := k0 + uint64(off/ysb.TupleSize)
		for o := 0; o < len(part); o += ysb.TupleSize {
			binary.LittleEndian.PutUint64(part[o:], uint64(g.g.Config().StartMs)+(k+uint64(o/ysb.TupleSize))/rate)
		}
		off += int(n)
	}
}

// Period is lcm(3, 5, ads, rate) tuples (ysb.BundleTuples).
func (g *ysbGen) Period() uint64 { return g.period }
