package sql

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/workloads"
	"github.com/saber-hx/saber-hx/ysb"
)

// BenchmarkSQLAgainstGo runs the same query over the same bytes, compiled
// from SQL (examples/) and built in Go (ysb.Query, the workloads), on two
// workers: a query given in SQL must run at the Go-built query's speed,
// which it does when both compile to the same plan. Alternate the two with
// -count and compare with benchstat:
//
//	go test -run '^$' -bench SQLAgainstGo -count 8 ./sql/
func BenchmarkSQLAgainstGo(b *testing.B) {
	const tuples = 1 << 20
	// YSB: the table from the generator, loaded into the SQL program the
	// way run does (through its CSV).
	gen, err := ysb.NewGenerator(ysb.DefaultGenConfig())
	require.NoError(b, err)
	ysbData := make([]byte, tuples*ysb.TupleSize)
	gen.Fill(ysbData, 0)
	// cm1: the workload's generator, the same for both.
	w, err := workloads.Lookup("cm1")
	require.NoError(b, err)
	cm1Gen, err := w.NewGenerator(workloads.DefaultParams())
	require.NoError(b, err)
	cm1Data := make([]byte, tuples*w.Schema.TupleSize)
	cm1Gen.Fill(cm1Data, 0)

	for _, tc := range []struct {
		name, file string
		data       []byte
		goSpec     func(b *testing.B) engine.Spec
		sqlSpec    func(b *testing.B, p *Program)
	}{
		{"ysb", "ysb.sql", ysbData,
			func(*testing.B) engine.Spec { return engine.Spec{Query: ysb.Query(gen.Campaigns(), ysb.WindowMs)} },
			func(b *testing.B, p *Program) { loadCampaigns(b, p, gen.Campaigns()) }},
		{"cm1", "cm1.sql", cm1Data,
			func(b *testing.B) engine.Spec {
				q, err := w.Build(workloads.DefaultParams())
				require.NoError(b, err)
				return engine.Spec{Query: q}
			},
			func(*testing.B, *Program) {}},
	} {
		text, err := os.ReadFile(filepath.Join("..", "examples", tc.file))
		require.NoError(b, err)
		p, err := Compile(string(text))
		require.NoError(b, err)
		tc.sqlSpec(b, p)
		for _, from := range []string{"go", "sql"} {
			b.Run(tc.name+"/"+from, func(b *testing.B) {
				spec := p.Queries[0].Spec
				if from == "go" {
					spec = tc.goSpec(b)
				}
				spec.Windows = func(*engine.Window) error { return nil }
				b.SetBytes(int64(len(tc.data)))
				b.ReportAllocs()
				for b.Loop() {
					eng, err := engine.Start(engine.Config{Workers: 2, TaskSize: 256 << 10, BufferSize: 4 << 20}, []engine.Spec{spec})
					require.NoError(b, err)
					require.NoError(b, eng.Stream(0).Write(tc.data))
					_, err = eng.CloseAll()
					require.NoError(b, err)
				}
				b.ReportMetric(float64(b.N)*tuples/b.Elapsed().Seconds()/1e6, "Mtuples/s")
			})
		}
	}
}

// loadCampaigns loads YSB's campaigns table into the program's table.
func loadCampaigns(b *testing.B, p *Program, c *ysb.Campaigns) {
	b.Helper()
	t := p.Table("campaigns")
	require.NotNil(b, t)
	rows := make([][]byte, len(c.AdIDs))
	for i := range rows {
		rows[i] = append(append([]byte(nil), c.AdIDs[i][:]...), c.CampaignIDs[i][:]...)
	}
	require.NoError(b, t.SetRows(rows))
}
