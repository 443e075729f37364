package workloads

import (
	"encoding/binary"

	"github.com/saber-hx/saber-hx/query"
)

// SmartGridTupleSize is the size of a smart-grid measurement.
const SmartGridTupleSize = 32

// smartGridSchema: a DEBS 2014 measurement, 32 bytes with 4 bytes of padding.
var smartGridSchema = mustSchema(SmartGridTupleSize,
	query.Attribute{Name: "timestamp", Type: query.Int64, Offset: 0},
	query.Attribute{Name: "value", Type: query.Float32, Offset: 8},
	query.Attribute{Name: "property", Type: query.Int32, Offset: 12},
	query.Attribute{Name: "plug", Type: query.Int32, Offset: 16},
	query.Attribute{Name: "household", Type: query.Int32, Offset: 20},
	query.Attribute{Name: "house", Type: query.Int32, Offset: 24},
)

// Smart-grid topology (see the package doc).
const (
	sgHouses              = 40
	sgHouseholdsPerHouse  = 20
	sgPlugsPerHousehold   = 10
	sgPlugs               = sgHouses * sgHouseholdsPerHouse * sgPlugsPerHousehold // 8000
	sgLoadProperty        = 1
	sgBaseMin, sgBaseSpan = 1, 199 // base load uniform in [1, 200) W
)

var sgWindow = query.Sliding(3600000, 1000)

var sg1Workload = &Workload{
	Name:               "sg1",
	Description:        "smart grid: global AVG(value), range 3600 s slide 1 s (8000 plugs, 32-byte measurements)",
	Schema:             smartGridSchema,
	Windowed:           true,
	DefaultWindow:      sgWindow,
	DefaultTuplesPerMs: 8,
	ValidateTuples:     50000,
}

var sg2Workload = &Workload{
	Name:               "sg2",
	Description:        "smart grid: AVG(value) GROUP BY plug, household, house, range 3600 s slide 1 s (8000 plugs)",
	Schema:             smartGridSchema,
	Windowed:           true,
	DefaultWindow:      sgWindow,
	DefaultTuplesPerMs: 8,
	ValidateTuples:     1000,
}

func init() {
	sg1Workload.Build = func(p Params) (*query.Query, error) {
		return buildApp(sg1Workload, p, &query.Query{
			Name:       "SG1",
			Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("value"), As: "avg_value"}},
		})
	}
	sg1Workload.NewGenerator = func(p Params) (Generator, error) { return newSmartGridGen(sg1Workload, p) }
	sg2Workload.Build = func(p Params) (*query.Query, error) {
		return buildApp(sg2Workload, p, &query.Query{
			Name:       "SG2",
			GroupBy:    []query.Expr{query.C("plug"), query.C("household"), query.C("house")},
			Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("value"), As: "avg_value"}},
		})
	}
	sg2Workload.NewGenerator = func(p Params) (Generator, error) { return newSmartGridGen(sg2Workload, p) }
}

// smartGridGen generates measurements: the plug index is stratified in
// [0, 8000) (each plug once per block of 8000 tuples); value is the plug's
// base load times 0.75 + 0.5*u, u from one hash per tuple.
type smartGridGen struct {
	name         string
	rate, period uint64
	key, pkey    uint64
	base         []float32 // per plug index
}

func newSmartGridGen(w *Workload, p Params) (Generator, error) {
	if err := w.check(p); err != nil {
		return nil, err
	}
	rate, _ := w.rate(p)
	g := &smartGridGen{
		name:   w.Name,
		rate:   rate,
		period: periodFor(rate, sgPlugs),
		key:    seedKey(p.Seed, "smartgrid"),
		pkey:   seedKey(p.Seed, "smartgrid/plug"),
		base:   make([]float32, sgPlugs),
	}
	bk := seedKey(p.Seed, "smartgrid/base")
	for i := range g.base {
		g.base[i] = sgBaseMin + sgBaseSpan*unit24(mix(bk+uint64(i)*gamma))
	}
	return g, nil
}

func (g *smartGridGen) Period() uint64 { return g.period }

func (g *smartGridGen) Fill(dst []byte, k0 uint64) {
	checkLen(g.name, dst, SmartGridTupleSize)
	c := newCursor(k0, g.rate, g.period, g.key, 1)
	plug := newStrat(sgPlugs, g.pkey)
	plug.seek(c.j)
	base := g.base[:sgPlugs]
	le := binary.LittleEndian
	for off := 0; off+SmartGridTupleSize <= len(dst); off += SmartGridTupleSize {
		t := dst[off : off+SmartGridTupleSize : off+SmartGridTupleSize]
		h := mix(c.s + gamma)
		i := plug.value
		v := base[i%sgPlugs] * (0.75 + 0.5*unit24(h))
		le.PutUint64(t[0:], c.ms)
		le.PutUint32(t[8:], f32(v))
		le.PutUint32(t[12:], sgLoadProperty)
		le.PutUint32(t[16:], uint32(i%sgPlugsPerHousehold))
		le.PutUint32(t[20:], uint32(i/sgPlugsPerHousehold%sgHouseholdsPerHouse))
		le.PutUint32(t[24:], uint32(i/(sgPlugsPerHousehold*sgHouseholdsPerHouse)))
		le.PutUint32(t[28:], 0)
		if c.next() {
			plug.seek(0)
		} else {
			plug.next()
		}
	}
}
