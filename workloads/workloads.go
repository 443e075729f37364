// Package workloads holds SABER's benchmark workloads: for each, a schema of
// fixed-size little-endian tuples, a deterministic generator and a query
// builder.
//
// The original traces (Google cluster monitoring, DEBS 2014 smart grid,
// Linear Road) are not available offline, so every generator follows the
// published schema with a stated synthetic distribution. Every value of tuple
// k is a pure function of (parameters, k): fields are drawn from a
// counter-based splitmix64 hash of (seed, j, field), where j = k mod Period,
// so that any range of the stream can be produced without generating what
// precedes it, and replaying a bundle of Period tuples with event times
// shifted continues the stream exactly. The event time (attribute 0, int64
// ms) of tuple k is k / TuplesPerMs.
//
// "Uniform in [0, n)" below means floor(u*n) for a 64-bit hash fraction u
// (bias below 2^-30). "Stratified in [0, n)" means that every aligned block
// of n consecutive tuples (k = b*n ... b*n+n-1) holds each value of [0, n)
// exactly once, in an order that is a pseudo-random rotation, per block, of
// a fixed stride permutation.
//
// Synthetic workloads (SABER's micro-benchmarks), 32-byte tuples:
// timestamp int64, a1..a6 int32.
//
//   - a1 is stratified in [0, 1000) (in [0, Groups) for groupby), so that
//     select's selectivity and groupby's number of groups are exact by
//     construction on every aligned block of 1000 (Groups) tuples.
//   - a2..a6 are uniform in [0, 1000), independent.
//   - proj (PROJ_m): stateless; m projections p1..pm, each an arithmetic
//     expression of depth d: level 1 is a_i * 3 + 2 and level l wraps level
//     l-1 as (e - a_j) * 3 + 2, cycling through the attributes.
//   - select (SELECT_n): stateless; WHERE is the AND of n predicates. The
//     first, a1 < round(1000*s), passes exactly the fraction
//     round(1000*s)/1000 of every block of 1000 tuples; the other n-1 are
//     always true on the generated data (a2..a6 are in [0, 1000)) and cycle
//     through the operators >=, <, !=, <=, >, = and the attributes a2..a6.
//   - agg (AGG_f): f(a2) over a sliding range window of 1000 ms, slide 100 ms.
//   - groupby (GROUP-BY_o): COUNT(*) and SUM(a2) GROUP BY a1, a tumbling
//     range window of 1000 ms; a1 takes exactly Groups distinct values.
//   - default rate: 1000 tuples per ms.
//
// Cluster monitoring (cm1, cm2), 64-byte task events: timestamp int64,
// jobId int64, taskId int64, machineId int64, userId int32, eventType int32,
// category int32, priority int32, cpu float32, ram float32, disk float32,
// constraints int32 (no padding: the attributes fill 64 bytes).
//
//   - jobId: Zipf (s = 1) over a pool of 1000 jobs, drawn through a
//     65536-entry inverse-CDF table (the most popular job has about 13% of
//     the events, the least about 0.013%); the job of rank r has id
//     6000000000 + (r*337 + 11) mod 1000, and belongs to user r mod 100
//     (userId).
//   - taskId uniform in [0, 1000); machineId uniform in [0, 12500).
//   - eventType uniform in [0, 9) (SUBMIT=0, SCHEDULE=1, EVICT, FAIL,
//     FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING=8); category
//     uniform in [0, 4); priority uniform in [0, 12); constraints uniform in
//     {0, 1}.
//   - cpu, ram, disk: uniform floats in [0, 1) (24-bit resolution).
//   - cm1: SUM(cpu) GROUP BY category; cm2: AVG(cpu) WHERE eventType = 1
//     GROUP BY jobId; both over a sliding range window of 60 s, slide 1 s.
//   - default rate: 10 tuples per ms.
//
// Smart grid (sg1, sg2), 32-byte tuples: timestamp int64, value float32,
// property int32, plug int32, household int32, house int32, 4 bytes of zero
// padding.
//
//   - 8000 plugs: houses 0..39, households 0..19 per house, plugs 0..9 per
//     household (plug, household and house are the ids within their parent,
//     as in DEBS 2014). The plug index is stratified in [0, 8000): every
//     plug reports exactly once per block of 8000 tuples (once per second at
//     the default rate).
//   - property is always 1 (a load measurement, in watts).
//   - value = base(plug) * (0.75 + 0.5*u): a per-plug base load uniform in
//     [1, 200) W (fixed for the plug) times uniform noise of +-25%.
//   - sg1: AVG(value); sg2: AVG(value) GROUP BY plug, household, house; both
//     over a sliding range window of 3600 s, slide 1 s.
//   - default rate: 8 tuples per ms.
//
// Linear road (lrb1), 32-byte tuples: timestamp int64, vehicle int32, speed
// float32, highway int32, lane int32, direction int32, position int32.
//
//   - highway uniform in [0, 10), direction uniform in {0, 1}, lane uniform
//     in [0, 5), position uniform in [0, 528000) feet (100 segments of 5280
//     feet), vehicle uniform in [0, 100000).
//   - One (highway, direction, segment) in five, chosen by a hash of the
//     seed, is congested: its speeds are uniform in [0, 30) mph (mean 15);
//     elsewhere speeds are uniform in [30, 100) (mean 65). So HAVING
//     avg_speed < 40 keeps the congested groups and drops the others.
//   - lrb1: AVG(speed) AS avg_speed GROUP BY highway, direction,
//     position / 5280 HAVING avg_speed < 40, over a sliding range window of
//     300 s, slide 1 s.
//   - default rate: 10 tuples per ms.
//
// The composite workloads (composite.go) run several of the engine's specs
// (Workload.Parts): JOIN_r ("join"), a window theta-join of two synthetic
// streams, and sg3, sg2 and sg1 chained into a window join.
package workloads

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// Params parameterises a workload. Fields that a workload does not use are
// ignored by it (Workload.Options names those it uses).
type Params struct {
	// synthetic operators (SABER's micro-benchmarks)
	Attributes  int           // proj: m projected expressions (default 4), in [1, MaxAttributes]
	ExprDepth   int           // proj: depth of each arithmetic expression (default 1), in [1, MaxExprDepth]
	Predicates  int           // select: n predicates (default 16), in [1, MaxPredicates]
	Selectivity float64       // select: fraction of tuples that pass (default 0.5), in [0, 1]
	Agg         query.AggFunc // agg: count|sum|avg|min|max (default avg)
	Groups      int           // groupby: distinct keys (default 64), in [1, MaxGroups]
	// JoinPredicates is JOIN_r's r (default 1), in [1, MaxJoinPredicates].
	JoinPredicates int
	Window         query.Window // zero value: the workload's default window
	// TuplesPerMs is the event-time rate of the generator, in
	// [1, MaxTuplesPerMs]; 0 means the workload's DefaultTuplesPerMs (1000
	// for the synthetic workloads, see each application).
	TuplesPerMs int
	Seed        uint64
}

// Bounds of the parameters.
const (
	MaxAttributes  = 64
	MaxExprDepth   = 16
	MaxPredicates  = 256
	MaxGroups      = 1 << 24
	MaxTuplesPerMs = 1 << 20
)

// DefaultParams returns the default parameters. TuplesPerMs is 0: each
// workload's DefaultTuplesPerMs.
func DefaultParams() Params {
	return Params{
		Attributes:  4,
		ExprDepth:   1,
		Predicates:  16,
		Selectivity: 0.5,
		Agg:         query.Avg,
		Groups:      64,
		Seed:        42,

		JoinPredicates: 1,
	}
}

// Workload is one benchmark: a schema, a query builder and a generator.
type Workload struct {
	Name        string
	Description string // one line, for `saber-hx bench --list`
	Schema      *query.Schema
	Windowed    bool // whether --window-type/--window-size/--window-slide apply
	// Options are the Params it reads beyond TuplesPerMs, Seed and Window,
	// by saber-hx bench's flag names (attributes, expr-depth, predicates,
	// selectivity, agg, groups, join-predicates): NewBench refuses one
	// given (BenchConfig.Given) that no workload of the run reads.
	Options []string
	// DefaultWindow is the window used when Params.Window is zero (zero for
	// stateless workloads).
	DefaultWindow query.Window
	// DefaultTuplesPerMs is the generator's rate when Params.TuplesPerMs is 0.
	DefaultTuplesPerMs int
	// ValidateTuples is the input that `saber-hx bench --validate` checks
	// by default: the naive reference evaluator's cost grows with the
	// windows each tuple lies in times the groups of each window (an hour
	// slid by a second puts every tuple in 3600 windows), so each workload
	// has its own bound, chosen to finish well under a minute on two cores
	// (docs/workloads.md has the times).
	ValidateTuples int
	// Build returns the validated query for p (error naming the bad
	// parameter and valid range, e.g. "selectivity 1.5: must be in [0, 1]").
	Build func(p Params) (*query.Query, error)
	// NewGenerator returns the generator for p; it refuses the same bad
	// parameters as Build.
	NewGenerator func(p Params) (Generator, error)
	// Parts, for composite workloads (join, sg3), returns their operators;
	// Build then refuses. nil for single-query workloads.
	Parts func(p Params) ([]Part, error)
}

// Generator produces a workload's stream. Generators are immutable after
// construction and safe for concurrent use.
type Generator interface {
	// Fill writes tuples k0, k0+1, ... into dst (a whole number of tuples;
	// Fill panics otherwise). Tuple k is a pure function of (params, k); its
	// event time is k / TuplesPerMs (ms, attribute 0), never decreasing.
	Fill(dst []byte, k0 uint64)
	// Period: the attributes other than event time repeat every Period
	// tuples, and Period is a multiple of TuplesPerMs, so a bundle of Period
	// tuples can be replayed with event times shifted by Period/TuplesPerMs
	// ms per pass (0: no period; don't replay).
	Period() uint64
}

var all = []*Workload{
	projWorkload,
	selectWorkload,
	aggWorkload,
	groupbyWorkload,
	cm1Workload,
	cm2Workload,
	sg1Workload,
	sg2Workload,
	lrb1Workload,
}

// All returns the workloads in a stable order: proj, select, agg, groupby,
// cm1, cm2, sg1, sg2, lrb1, join, sg3, ysb.
func All() []*Workload { return append([]*Workload(nil), all...) }

// Names returns the workload names in the order of All.
func Names() []string {
	n := make([]string, len(all))
	for i, w := range all {
		n[i] = w.Name
	}
	return n
}

// Lookup returns the workload called name (case-insensitive).
func Lookup(name string) (*Workload, error) {
	for _, w := range all {
		if strings.EqualFold(w.Name, name) {
			return w, nil
		}
	}
	return nil, fmt.Errorf("unknown workload %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// --- parameter checks -------------------------------------------------------

func checkRange(what string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d: must be in [%d, %d]", what, v, lo, hi)
	}
	return nil
}

// rate returns the effective TuplesPerMs of p for w.
func (w *Workload) rate(p Params) (uint64, error) {
	if p.TuplesPerMs == 0 {
		return uint64(w.DefaultTuplesPerMs), nil
	}
	if err := checkRange("tuples per ms", p.TuplesPerMs, 1, MaxTuplesPerMs); err != nil {
		return 0, fmt.Errorf("%s: %w", w.Name, err)
	}
	return uint64(p.TuplesPerMs), nil
}

// window returns the window of p for w: its default when p.Window is zero.
// Stateless workloads refuse a window.
func (w *Workload) window(p Params) (query.Window, error) {
	if p.Window == (query.Window{}) {
		return w.DefaultWindow, nil
	}
	if !w.Windowed {
		return query.Window{}, fmt.Errorf("%s: window %s %d/%d: %s is a stateless query and takes no window", w.Name, p.Window.Type, p.Window.Size, p.Window.Slide, w.Name)
	}
	if err := p.Window.Validate(); err != nil {
		return query.Window{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	return p.Window, nil
}

// finish validates q for w.
func finish(w *Workload, q *query.Query) (*query.Query, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	return q, nil
}

// --- hashing and counters ---------------------------------------------------

// gamma is splitmix64's increment; gammaN is N*gamma mod 2^64, the offset of
// hash field N of a tuple.
const (
	gamma  uint64 = 0x9E3779B97F4A7C15
	gamma2        = uint64(2 * 0x9E3779B97F4A7C15 & (1<<64 - 1))
	gamma3        = uint64(3 * 0x9E3779B97F4A7C15 & (1<<64 - 1))
)

// mix is splitmix64's output function.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// seedKey derives a per-workload hash key from the seed.
func seedKey(seed uint64, salt string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a of the salt
	for i := 0; i < len(salt); i++ {
		h ^= uint64(salt[i])
		h *= 1099511628211
	}
	return mix(seed ^ mix(h))
}

// digit draws a value uniform in [0, n) from the 64-bit fraction x and
// returns it with the remaining fraction, for the next draw.
func digit(x, n uint64) (v, rest uint64) {
	return bits.Mul64(x, n)
}

// unit24 is a float32 uniform in [0, 1) from the top 24 bits of x.
func unit24(x uint64) float32 { return float32(x>>40) * (1.0 / (1 << 24)) }

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Period bounds: a period is the smallest multiple of lcm(rate, blocks) that
// is at least minPeriod tuples; if the lcm exceeds maxPeriod there is none.
const (
	minPeriod = 1 << 16
	maxPeriod = 1 << 24
)

func periodFor(rate uint64, blocks ...uint64) uint64 {
	l := rate
	for _, b := range blocks {
		l = l / gcd(l, b) * b
		if l > maxPeriod {
			return 0
		}
	}
	if l > maxPeriod {
		return 0
	}
	return (minPeriod + l - 1) / l * l
}

// cursor runs the per-tuple counters of Fill: the event time, the position
// j = k mod period and the hash counter s = key + j*step.
type cursor struct {
	ms, sub, rate uint64
	j, period     uint64
	s, key, step  uint64
}

func newCursor(k0, rate, period, key, fields uint64) cursor {
	c := cursor{ms: k0 / rate, sub: k0 % rate, rate: rate, j: k0, period: period, key: key, step: fields * gamma}
	if period > 0 {
		c.j = k0 % period
	}
	c.s = key + c.j*c.step
	return c
}

// next advances to the next tuple and reports whether j wrapped to 0.
func (c *cursor) next() bool {
	c.s += c.step
	if c.sub++; c.sub == c.rate {
		c.sub = 0
		c.ms++
	}
	if c.j++; c.j == c.period {
		c.j = 0
		c.s = c.key
		return true
	}
	return false
}

// strat draws a stratified value in [0, g): in block b = j / g, position
// r = j mod g has value (r*a + off(b)) mod g, where a is coprime to g.
type strat struct {
	g, a, key   uint64
	r, b, value uint64
}

func newStrat(g, key uint64) strat {
	a := uint64(float64(g) * 0.6180339887498949)
	for a > 1 && gcd(a, g) != 1 {
		a--
	}
	if g > 1 {
		a = max(a, 1)
	} else {
		a = 0
	}
	return strat{g: g, a: a, key: key}
}

func (p *strat) off(b uint64) uint64 { return mix(p.key+b*gamma) % p.g }

func (p *strat) seek(j uint64) {
	p.r, p.b = j%p.g, j/p.g
	p.value = (p.r*p.a + p.off(p.b)) % p.g
}

func (p *strat) next() {
	if p.r++; p.r == p.g {
		p.r = 0
		p.b++
		p.value = p.off(p.b)
		return
	}
	if p.value += p.a; p.value >= p.g {
		p.value -= p.g
	}
}

func checkLen(name string, dst []byte, size int) {
	if len(dst)%size != 0 {
		panic(fmt.Sprintf("workloads: %s: Fill: len(dst) = %d is not a multiple of %d", name, len(dst), size))
	}
}

func f32(v float32) uint32 { return math.Float32bits(v) }

func mustSchema(size int, attrs ...query.Attribute) *query.Schema {
	s, err := query.NewSchema(size, attrs...)
	if err != nil {
		panic(err)
	}
	return s
}
