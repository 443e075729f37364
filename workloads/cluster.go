package workloads

import (
	"encoding/binary"
	"sync"

	"github.com/saber-hx/saber-hx/query"
)

// ClusterTupleSize is the size of a cluster-monitoring task event.
const ClusterTupleSize = 64

// clusterSchema: a Google cluster-trace task event, 64 bytes.
var clusterSchema = mustSchema(ClusterTupleSize,
	query.Attribute{Name: "timestamp", Type: query.Int64, Offset: 0},
	query.Attribute{Name: "jobId", Type: query.Int64, Offset: 8},
	query.Attribute{Name: "taskId", Type: query.Int64, Offset: 16},
	query.Attribute{Name: "machineId", Type: query.Int64, Offset: 24},
	query.Attribute{Name: "userId", Type: query.Int32, Offset: 32},
	query.Attribute{Name: "eventType", Type: query.Int32, Offset: 36},
	query.Attribute{Name: "category", Type: query.Int32, Offset: 40},
	query.Attribute{Name: "priority", Type: query.Int32, Offset: 44},
	query.Attribute{Name: "cpu", Type: query.Float32, Offset: 48},
	query.Attribute{Name: "ram", Type: query.Float32, Offset: 52},
	query.Attribute{Name: "disk", Type: query.Float32, Offset: 56},
	query.Attribute{Name: "constraints", Type: query.Int32, Offset: 60},
)

// Cluster-monitoring distribution constants (see the package doc).
const (
	cmJobs       = 1000
	cmUsers      = 100
	cmTasks      = 1000
	cmMachines   = 12500
	cmEventTypes = 9
	cmCategories = 4
	cmPriorities = 12
	cmJobIDBase  = 6000000000
	cmZipfBits   = 16
)

var cmWindow = query.Sliding(60000, 1000)

var cm1Workload = &Workload{
	Name:               "cm1",
	Description:        "cluster monitoring: SUM(cpu) GROUP BY category, range 60 s slide 1 s (64-byte task events)",
	Schema:             clusterSchema,
	Windowed:           true,
	DefaultWindow:      cmWindow,
	DefaultTuplesPerMs: 10,
	ValidateTuples:     1000000,
}

var cm2Workload = &Workload{
	Name:               "cm2",
	Description:        "cluster monitoring: AVG(cpu) WHERE eventType = 1 GROUP BY jobId, range 60 s slide 1 s (64-byte task events)",
	Schema:             clusterSchema,
	Windowed:           true,
	DefaultWindow:      cmWindow,
	DefaultTuplesPerMs: 10,
	ValidateTuples:     1000000,
}

func init() {
	cm1Workload.Build = func(p Params) (*query.Query, error) {
		return buildApp(cm1Workload, p, &query.Query{
			Name:       "CM1",
			GroupBy:    []query.Expr{query.C("category")},
			Aggregates: []query.Aggregate{{Func: query.Sum, Arg: query.C("cpu"), As: "sum_cpu"}},
		})
	}
	cm1Workload.NewGenerator = func(p Params) (Generator, error) { return newClusterGen(cm1Workload, p) }
	cm2Workload.Build = func(p Params) (*query.Query, error) {
		return buildApp(cm2Workload, p, &query.Query{
			Name:       "CM2",
			Where:      query.ColEq("eventType", 1),
			GroupBy:    []query.Expr{query.C("jobId")},
			Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("cpu"), As: "avg_cpu"}},
		})
	}
	cm2Workload.NewGenerator = func(p Params) (Generator, error) { return newClusterGen(cm2Workload, p) }
}

// buildApp completes q (schema and window) for an application workload,
// whose only parameters are the window and the rate.
func buildApp(w *Workload, p Params, q *query.Query) (*query.Query, error) {
	if _, err := w.rate(p); err != nil {
		return nil, err
	}
	win, err := w.window(p)
	if err != nil {
		return nil, err
	}
	q.Schema = w.Schema
	q.Window = win
	return finish(w, q)
}

// cmJobTables: the Zipf inverse-CDF table (job rank of each 16-bit hash
// bucket), and the id and user of each rank.
type cmJobTables struct {
	rank [1 << cmZipfBits]uint16
	id   [cmJobs]int64
	user [cmJobs]int32
}

var cmTables = sync.OnceValue(func() *cmJobTables {
	t := new(cmJobTables)
	var h float64
	for r := 1; r <= cmJobs; r++ {
		h += 1 / float64(r)
	}
	// Bucket i covers u in [i, i+1)/2^16; it takes the rank whose CDF
	// interval contains the bucket's midpoint.
	cdf, r := 1/h, 0
	for i := range t.rank {
		u := (float64(i) + 0.5) / (1 << cmZipfBits)
		for u > cdf && r < cmJobs-1 {
			r++
			cdf += 1 / (float64(r+1) * h)
		}
		t.rank[i] = uint16(r)
	}
	for r := range t.id {
		t.id[r] = cmJobIDBase + int64((r*337+11)%cmJobs)
		t.user[r] = int32(r % cmUsers)
	}
	return t
})

// clusterGen generates task events from three hashes per tuple:
// h1: cpu (bits 40..63), ram (bits 16..39), job (Zipf bucket, bits 0..15);
// h2: disk (bits 40..63), then eventType, category, priority, constraints as
// successive digits of the low 40 bits; h3: taskId, machineId as digits.
type clusterGen struct {
	name         string
	rate, period uint64
	key          uint64
	t            *cmJobTables
}

func newClusterGen(w *Workload, p Params) (Generator, error) {
	if _, err := w.Build(p); err != nil {
		return nil, err
	}
	rate, _ := w.rate(p)
	return &clusterGen{
		name:   w.Name,
		rate:   rate,
		period: periodFor(rate),
		key:    seedKey(p.Seed, "cluster"),
		t:      cmTables(),
	}, nil
}

func (g *clusterGen) Period() uint64 { return g.period }

func (g *clusterGen) Fill(dst []byte, k0 uint64) {
	checkLen(g.name, dst, ClusterTupleSize)
	c := newCursor(k0, g.rate, g.period, g.key, 3)
	tb := g.t
	le := binary.LittleEndian
	for off := 0; off+ClusterTupleSize <= len(dst); off += ClusterTupleSize {
		t := dst[off : off+ClusterTupleSize : off+ClusterTupleSize]
		h1 := mix(c.s + gamma)
		h2 := mix(c.s + gamma2)
		h3 := mix(c.s + gamma3)
		job := tb.rank[uint16(h1)]
		et, r := digit(h2<<24, cmEventTypes)
		cat, r := digit(r, cmCategories)
		pri, r := digit(r, cmPriorities)
		con, _ := digit(r, 2)
		task, r := digit(h3, cmTasks)
		mach, _ := digit(r, cmMachines)
		le.PutUint64(t[0:], c.ms)
		le.PutUint64(t[8:], uint64(tb.id[job]))
		le.PutUint64(t[16:], task)
		le.PutUint64(t[24:], mach)
		le.PutUint32(t[32:], uint32(tb.user[job]))
		le.PutUint32(t[36:], uint32(et))
		le.PutUint32(t[40:], uint32(cat))
		le.PutUint32(t[44:], uint32(pri))
		le.PutUint32(t[48:], f32(unit24(h1)))
		le.PutUint32(t[52:], f32(unit24(h1<<24)))
		le.PutUint32(t[56:], f32(unit24(h2)))
		le.PutUint32(t[60:], uint32(con))
		c.next()
	}
}
