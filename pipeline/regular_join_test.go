package pipeline_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// TestRegularJoin: a regular join of two streams as Flink writes it (q3's
// shape: one key, a filter of each side in WHERE and ON), over CSV files
// whose keys repeat on both sides and are NULL now and then, and whose
// rows come in any order of event time: its rows are a plain Go nested
// loop's, whatever the workers and task size, and the reference
// evaluator's (--validate).
func TestRegularJoin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 20))
	type row struct {
		ts, k int64
		null  bool
		v     string
	}
	var sides [2][]row
	for s := range sides {
		var b strings.Builder
		for i := range 3000 {
			rw := row{ts: r.Int64N(100_000), k: r.Int64N(300), null: r.IntN(20) == 0, v: fmt.Sprintf("side %d row %d", s, i)}
			sides[s] = append(sides[s], rw)
			if rw.null {
				fmt.Fprintf(&b, "%d,,%s\n", rw.ts, rw.v)
			} else {
				fmt.Fprintf(&b, "%d,%d,%s\n", rw.ts, rw.k, rw.v)
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.csv", s)), []byte(b.String()), 0o644))
	}
	var want []string
	for _, a := range sides[0] {
		for _, b := range sides[1] {
			if !a.null && !b.null && a.k == b.k && a.k%3 != 0 && b.ts%2 == 0 {
				want = append(want, fmt.Sprintf("%s,%s,%d", a.v, b.v, a.k))
			}
		}
	}
	require.NotEmpty(t, want)
	slices.Sort(want)
	text := fmt.Sprintf(`CREATE TABLE l (ts BIGINT, k BIGINT, v VARCHAR, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
CREATE TABLE r (ts BIGINT, k BIGINT, v VARCHAR, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
CREATE VIEW out AS SELECT A.v, B.v AS w, A.k FROM l AS A INNER JOIN r AS B ON A.k = B.k AND MOD(B.ts, 2) = 0 WHERE MOD(A.k, 3) <> 0;`,
		filepath.Join(dir, "s0.csv"), filepath.Join(dir, "s1.csv"))
	for _, cfg := range []engine.Config{{Workers: 1}, {Workers: 2, TaskSize: 64 * 64}, {Workers: 3, TaskSize: 64 * 7}} {
		t.Run(fmt.Sprintf("w%d", cfg.Workers), func(t *testing.T) {
			prog, err := pipeline.Compile("-e", text)
			require.NoError(t, err)
			assert.Equal(t, want, validatedRows(t, prog, "out", cfg))
		})
	}
}
