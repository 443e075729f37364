package workloads

import (
	"encoding/binary"

	"github.com/saber-hx/saber-hx/query"
)

// LinearRoadTupleSize is the size of a Linear Road position report.
const LinearRoadTupleSize = 32

// linearRoadSchema: a Linear Road position report, 32 bytes.
var linearRoadSchema = mustSchema(LinearRoadTupleSize,
	query.Attribute{Name: "timestamp", Type: query.Int64, Offset: 0},
	query.Attribute{Name: "vehicle", Type: query.Int32, Offset: 8},
	query.Attribute{Name: "speed", Type: query.Float32, Offset: 12},
	query.Attribute{Name: "highway", Type: query.Int32, Offset: 16},
	query.Attribute{Name: "lane", Type: query.Int32, Offset: 20},
	query.Attribute{Name: "direction", Type: query.Int32, Offset: 24},
	query.Attribute{Name: "position", Type: query.Int32, Offset: 28},
)

// Linear Road distribution constants (see the package doc).
const (
	lrHighways      = 10
	lrDirections    = 2
	lrLanes         = 5
	lrSegmentFeet   = 5280
	lrSegments      = 100
	lrPositions     = lrSegments * lrSegmentFeet // 528000
	lrVehicles      = 100000
	lrCongestedOne  = 5  // one (highway, direction, segment) in lrCongestedOne is congested
	lrCongestedTop  = 30 // congested speeds uniform in [0, 30)
	lrFreeLow       = 30 // free-flow speeds uniform in [30, 100)
	lrFreeSpan      = 70
	lrHavingSpeed   = 40
	lrSegmentGroups = lrHighways * lrDirections * lrSegments
)

var lrb1Workload = &Workload{
	Name:               "lrb1",
	Description:        "linear road: AVG(speed) GROUP BY highway, direction, segment HAVING avg_speed < 40, range 300 s slide 1 s",
	Schema:             linearRoadSchema,
	Windowed:           true,
	DefaultWindow:      query.Sliding(300000, 1000),
	DefaultTuplesPerMs: 10,
	ValidateTuples:     50000,
}

func init() {
	lrb1Workload.Build = func(p Params) (*query.Query, error) {
		return buildApp(lrb1Workload, p, &query.Query{
			Name: "LRB1",
			GroupBy: []query.Expr{
				query.C("highway"),
				query.C("direction"),
				query.Div(query.C("position"), query.Int(lrSegmentFeet)),
			},
			Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("speed"), As: "avg_speed"}},
			Having:     query.Cmp(query.C("avg_speed"), query.Lt, query.Float(lrHavingSpeed)),
		})
	}
	lrb1Workload.NewGenerator = newLinearRoadGen
}

// linearRoadGen generates position reports from two hashes per tuple:
// h1: highway, direction, lane as successive digits, then the speed
// fraction (the remaining 64-bit fraction's top 24 bits); h2: position,
// vehicle as digits.
type linearRoadGen struct {
	rate, period uint64
	key          uint64
	congested    []bool // per (highway*2+direction)*100+segment
}

func newLinearRoadGen(p Params) (Generator, error) {
	w := lrb1Workload
	if _, err := w.Build(p); err != nil {
		return nil, err
	}
	rate, _ := w.rate(p)
	g := &linearRoadGen{
		rate:      rate,
		period:    periodFor(rate),
		key:       seedKey(p.Seed, "linearroad"),
		congested: make([]bool, lrSegmentGroups),
	}
	ck := seedKey(p.Seed, "linearroad/congestion")
	for i := range g.congested {
		v, _ := digit(mix(ck+uint64(i)*gamma), lrCongestedOne)
		g.congested[i] = v == 0
	}
	return g, nil
}

// isCongested reports whether segment seg of highway hw in direction dir is
// congested for the generator.
func (g *linearRoadGen) isCongested(hw, dir, seg int) bool {
	return g.congested[(hw*lrDirections+dir)*lrSegments+seg]
}

func (g *linearRoadGen) Period() uint64 { return g.period }

func (g *linearRoadGen) Fill(dst []byte, k0 uint64) {
	checkLen("lrb1", dst, LinearRoadTupleSize)
	c := newCursor(k0, g.rate, g.period, g.key, 2)
	cong := g.congested[:lrSegmentGroups]
	le := binary.LittleEndian
	for off := 0; off+LinearRoadTupleSize <= len(dst); off += LinearRoadTupleSize {
		t := dst[off : off+LinearRoadTupleSize : off+LinearRoadTupleSize]
		h1 := mix(c.s + gamma)
		h2 := mix(c.s + gamma2)
		hw, r := digit(h1, lrHighways)
		dir, r := digit(r, lrDirections)
		lane, r := digit(r, lrLanes)
		pos, r2 := digit(h2, lrPositions)
		veh, _ := digit(r2, lrVehicles)
		u := float64(unit24(r)) // in float64, so that the float32 rounding stays below the top
		speed := float32(lrFreeLow + lrFreeSpan*u)
		if cong[((hw*lrDirections+dir)*lrSegments+pos/lrSegmentFeet)%lrSegmentGroups] {
			speed = float32(lrCongestedTop * u)
		}
		le.PutUint64(t[0:], c.ms)
		le.PutUint32(t[8:], uint32(veh))
		le.PutUint32(t[12:], f32(speed))
		le.PutUint32(t[16:], uint32(hw))
		le.PutUint32(t[20:], uint32(lane))
		le.PutUint32(t[24:], uint32(dir))
		le.PutUint32(t[28:], uint32(pos))
		c.next()
	}
}
