package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/sink"
)

// TestNexmarkQ10Partitions: q10 as the project writes it puts each bid
// under dt=<day>/hm=<HH%3Amm>/ of ${NEXMARK_DIR}/data/output/
// ${SUBMIT_TIME}/bid/, its five other columns a line of the partition's
// file, and commits every partition (_SUCCESS) at the end; 1 to 3
// workers write the same files.
func TestNexmarkQ10Partitions(t *testing.T) {
	t.Parallel()
	c := nexmarkSQLCase{events: 12_000, rate: 40, ooo: 500, shift: 1_234} // five minutes: six partitions
	want := map[string][]string{}
	for _, e := range c.nexmarkEvents(t) {
		if e.Table != nexmark.BidTable {
			continue
		}
		tm := time.UnixMilli(e.DateTime).UTC()
		rel := "dt=" + tm.Format("2006-01-02") + "/hm=" + strings.ReplaceAll(tm.Format("15:04"), ":", "%3A")
		want[rel] = append(want[rel], fmt.Sprintf("%d,%d,%d,%s,%s\n", e.Bid.Auction, e.Bid.Bidder, e.Bid.Price, sqlTime(e.DateTime), csvField(string(e.Bid.Extra))))
	}
	require.Greater(t, len(want), 2)
	var first map[string]string // the files of 1 worker, byte for byte
	for workers := 1; workers <= 3; workers++ {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			text, err := os.ReadFile("../examples/nexmark/q10.sql")
			require.NoError(t, err)
			dir := t.TempDir()
			prog, err := pipeline.CompileEnv("q10.sql", string(text), func(k string) (string, bool) {
				v, ok := map[string]string{"NEXMARK_DIR": dir, "SUBMIT_TIME": "42"}[k]
				return v, ok
			})
			require.NoError(t, err)
			require.NoError(t, prog.ConfigureNexmark(func(cfg *nexmark.Config) { *cfg = c.config() }))
			job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: workers, TaskSize: prog.FitTaskSize(1 << 13), BufferSize: 1 << 20}})
			require.NoError(t, err)
			_, err = job.Run(context.Background())
			job.Close()
			require.NoError(t, err)
			out := filepath.Join(dir, "data", "output", "42", "bid")
			files, err := sink.ExistingPartitions(out, "_SUCCESS")
			require.NoError(t, err)
			got, raw := map[string][]string{}, map[string]string{}
			for rel, fs := range files {
				assert.Equal(t, []string{filepath.Join(out, rel, "data")}, fs)
				b, err := os.ReadFile(fs[0])
				require.NoError(t, err)
				raw[rel] = string(b)
				got[rel] = strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
				got[rel][len(got[rel])-1] += "\n"
				_, err = os.Stat(filepath.Join(out, rel, "_SUCCESS"))
				assert.NoError(t, err, rel)
			}
			for rel := range want {
				w := slices.Clone(want[rel])
				slices.Sort(w)
				g := slices.Clone(got[rel])
				slices.Sort(g)
				assert.Equal(t, w, g, rel)
			}
			assert.Len(t, got, len(want))
			if first == nil {
				first = raw
			}
			assert.Equal(t, first, raw, "the same bytes whatever the workers")
		})
	}
}
