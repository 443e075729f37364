package pipeline

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanLine: which kernel runs a query, its panes, and whether the GPU
// can run it (saber-hx explain's plans).
func TestPlanLine(t *testing.T) {
	plan := func(t *testing.T, text string, vectorised bool) string {
		t.Helper()
		p, err := Compile("t.sql", text)
		require.NoError(t, err)
		require.Len(t, p.SQL().Queries, 1)
		return PlanLine(p.SQL().Queries[0].Spec, vectorised)
	}
	example := func(t *testing.T, name string) string {
		b, err := os.ReadFile("../examples/" + name)
		require.NoError(t, err)
		return string(b)
	}
	ysb := example(t, "ysb.sql")
	assert.Equal(t, "panes of 10000, 1 per window; the fused kernel; the GPU can run it", plan(t, ysb, false))
	assert.Equal(t, "panes of 10000, 1 per window; vectorised kernels; the GPU can run it", plan(t, ysb, true))
	assert.Equal(t, "vectorised kernels; the GPU can run it", plan(t, example(t, "select.sql"), false), "a stateless query has no panes")
	assert.Equal(t, "window join (pairs per window, nested loops); the GPU can run its pairs", plan(t, example(t, "join.sql"), false))
	cm1 := plan(t, example(t, "cm1.sql"), false)
	assert.True(t, strings.HasPrefix(cm1, "panes of 1000, 60 per window; vectorised kernels; CPU only: query \"select1\": SUM(cpu) over a float expression"), cm1)
	assert.True(t, strings.HasSuffix(cm1, "no GPU kernel"), cm1)
	// A watermark delay keeps a query off the GPU.
	delayed := strings.Replace(ysb, "ip INT\n", "ip INT,\n  WATERMARK FOR event_time AS event_time - INTERVAL '1' SECOND\n", 1)
	require.NotEqual(t, ysb, delayed)
	assert.Equal(t, "panes of 10000, 1 per window; the fused kernel; CPU only: a watermark delay (the GPU kernels have none)", plan(t, delayed, false))
	// A regular join runs on the CPU alone.
	p, err := Compile("t.sql", "CREATE SOURCE a (ts BIGINT, k BIGINT) WITH (connector = 'stdin');\n"+
		"CREATE SOURCE b (ts BIGINT, k BIGINT) WITH (connector = 'stdin');\nSELECT * FROM a JOIN b ON a.k = b.k;")
	require.NoError(t, err)
	require.Len(t, p.SQL().Queries, 1)
	require.True(t, p.SQL().Queries[0].Spec.Join.Regular)
	assert.Equal(t, "regular join (a hash index per side, pairs as the later tuple is filed; state kept for ever); CPU only", PlanLine(p.SQL().Queries[0].Spec, false))
}
