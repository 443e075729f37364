package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/sink"
)

// TestPartitionedByTimestamp: a TIMESTAMP partition column names its
// partition as Flink does, by the value's toString (java.time's
// LocalDateTime: 2015-07-15T12:34, seconds and milliseconds only where
// not 0), escaped (':' as %3A); SQL's text (2015-07-15 12:34:00.000) is
// not Flink's directory.
func TestPartitionedByTimestamp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	require.NoError(t, os.WriteFile(in, []byte("2015-07-15 12:34:00.000,1\n2015-07-15 12:34:56.000,2\n1969-12-31 23:59:59.999,3\n"), 0o644))
	out := filepath.Join(dir, "out")
	text := `CREATE TABLE s (ts TIMESTAMP(3), v INT, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '` + in + `', 'format' = 'csv');
CREATE TABLE o (v INT, p TIMESTAMP(3)) PARTITIONED BY (p) WITH ('connector' = 'filesystem', 'path' = '` + out + `', 'format' = 'csv');
INSERT INTO o SELECT v, ts FROM s;`
	prog, err := pipeline.Compile("-e", text)
	require.NoError(t, err)
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	_, err = job.Run(context.Background())
	job.Close()
	require.NoError(t, err)
	files, err := sink.ExistingPartitions(out, "_SUCCESS")
	require.NoError(t, err)
	got := map[string]string{}
	for rel, fs := range files {
		require.Len(t, fs, 1)
		b, err := os.ReadFile(fs[0])
		require.NoError(t, err)
		got[rel] = string(b)
	}
	assert.Equal(t, map[string]string{
		"p=2015-07-15T12%3A34":          "1\n",
		"p=2015-07-15T12%3A34%3A56":     "2\n",
		"p=1969-12-31T23%3A59%3A59.999": "3\n",
	}, got)
}
