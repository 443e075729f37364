package pipeline

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// partRecord is a record of partLines' output, read back.
type partRecord struct {
	ts         int64
	rel, lines string
}

// TestPartLinesRuns: partLines makes one record per run of rows of one
// partition, in order, whose lines are the run's rows' and whose event
// time is the largest of theirs; the oracle is a record per row.
func TestPartLinesRuns(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	require.NoError(t, os.WriteFile(in, nil, 0o644))
	text := `CREATE TABLE s (ts TIMESTAMP(3), v INT, p INT, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '` + in + `', 'format' = 'csv');
CREATE TABLE o (ts TIMESTAMP(3), v INT, p INT) PARTITIONED BY (p) WITH ('connector' = 'filesystem', 'path' = '` + filepath.Join(dir, "out") + `', 'format' = 'csv');
INSERT INTO o SELECT ts, v, p FROM s;`
	prog, err := Compile("-e", text)
	require.NoError(t, err)
	job, err := prog.Open(Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job.Close()
	sinks := job.dirSinks()
	require.Len(t, sinks, 1)
	s := sinks[0]
	attrs := s.q.Output.Attrs
	require.Len(t, attrs, 4, "the event time, then ts, v, p")
	put := func(tup []byte, a query.Attribute, v int64) {
		if a.Type == query.Int32 {
			binary.LittleEndian.PutUint32(tup[a.Offset:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(tup[a.Offset:], uint64(v))
		}
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(200)
		tuples := make([]byte, n*s.size)
		var want []partRecord
		p := int64(0)
		for i := range n {
			if rng.IntN(8) == 0 {
				p = int64(rng.IntN(3)) // often the same partition again
			}
			ts, v := int64(rng.IntN(1_000_000)), int64(i)
			tup := tuples[i*s.size : (i+1)*s.size]
			put(tup, attrs[0], ts)
			put(tup, attrs[1], ts)
			put(tup, attrs[2], v)
			put(tup, attrs[3], p)
			rel, line := fmt.Sprintf("p=%d", p), fmt.Sprintf("%s,%d\n", sqlTimestamp(ts), v)
			if k := len(want) - 1; k >= 0 && want[k].rel == rel {
				want[k].ts = max(want[k].ts, ts)
				want[k].lines += line
				continue
			}
			want = append(want, partRecord{ts, rel, line})
		}
		prefix := []byte("kept")
		enc := s.partLines(prefix, tuples)
		assert.Equal(t, "kept", string(enc[:4]), "seed %d: dst's bytes kept", seed)
		var got []partRecord
		for rest := enc[4:]; len(rest) > 0; {
			require.GreaterOrEqual(t, len(rest), recHeader, "seed %d", seed)
			ts := int64(binary.LittleEndian.Uint64(rest))
			rel, lines := int(binary.LittleEndian.Uint16(rest[8:])), int(binary.LittleEndian.Uint32(rest[10:]))
			rest = rest[recHeader:]
			require.GreaterOrEqual(t, len(rest), rel+lines, "seed %d", seed)
			got = append(got, partRecord{ts, string(rest[:rel]), string(rest[rel : rel+lines])})
			rest = rest[rel+lines:]
		}
		assert.Equal(t, want, got, "seed %d", seed)
	}
}

// sqlTimestamp is a TIMESTAMP(3)'s text in a CSV output.
func sqlTimestamp(ms int64) string {
	return fmt.Sprintf("1970-01-01 %02d:%02d:%02d.%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000)
}
