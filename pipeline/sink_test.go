package pipeline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputsToOneDestination: a file output naming the process's
// standard output is refused beside a plain SELECT where Options.Stdout
// is that standard output, and allowed where Options.Stdout is a writer of
// the embedding program's own.
func TestOutputsToOneDestination(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "r.csv")
	require.NoError(t, os.WriteFile(in, []byte("1,2\n"), 0o644))
	prog, err := Compile("outs.sql", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'file', path = '`+in+`', format = 'csv');
CREATE SINK a AS SELECT ts FROM r WITH (connector = 'file', path = '/dev/stdout');
SELECT v FROM r;`)
	require.NoError(t, err)

	_, err = prog.Open(Options{Stdout: os.Stdout})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUsage), err)
	assert.Contains(t, err.Error(), "queries a and select1 both write to stdout")

	job, err := prog.Open(Options{Stdout: new(bytes.Buffer)})
	require.NoError(t, err)
	job.Close()
}
