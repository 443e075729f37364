package sink

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPartitionedRecoverEscapedColumn: a partition column whose name is
// escaped in the path (a quoted identifier `h:m`, its directories
// h%3Am=...) is found on a restart: its committed part kept, its
// pre-committed part of the durable checkpoint committed.
func TestPartitionedRecoverEscapedColumn(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	cfg := PartitionConfig{Dir: dir, Columns: []string{"h:m"}, Checkpointed: true}
	rel := string(AppendPartitionSegment(nil, "h:m", "12:34", false, "__DEFAULT_PARTITION__"))
	require.Equal(t, "h%3Am=12%3A34", rel)
	p, err := CreatePartitioned(cfg)
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	require.NoError(t, p.WriteRow(1, []byte(rel), []byte("a\n")))
	require.NoError(t, p.PreCommit(1))
	require.NoError(t, p.Commit(1))
	require.NoError(t, p.WriteRow(2, []byte(rel), []byte("b\n")))
	require.NoError(t, p.PreCommit(2))
	// kill -9 before epoch 2's commit, its checkpoint durable
	q, err := CreatePartitioned(cfg)
	require.NoError(t, err)
	require.NoError(t, q.Recover(2, 3, nil))
	assert.Equal(t, []string{rel}, q.Partitions())
	require.NoError(t, q.WriteRow(3, []byte(rel), []byte("c\n")))
	require.NoError(t, q.Finish())
	var got string
	for _, e := range []uint64{1, 2, 3} {
		b, err := os.ReadFile(filepath.Join(dir, rel, fmt.Sprintf("data.part-%020d", e)))
		if assert.NoError(t, err, "epoch %d", e) {
			got += string(b)
		}
	}
	assert.Equal(t, "a\nb\nc\n", got)
}
