package kafka

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/source"
)

// batch is n records of each of parts partitions, their ids from base
// and their event times from t0.
func batch(parts, n int, base, t0 int64) []rec {
	var out []rec
	for p := range parts {
		for i := range n {
			out = append(out, rec{part: int32(p), time: t0 + int64(i), id: base + int64(p)*1000 + int64(i)})
		}
	}
	return out
}

func recIDs(rs []rec) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.id
	}
	return out
}

// consumeAll reads s to the end, marks it all done and closes it (the
// done offsets committed).
func consumeAll(t *testing.T, s *Source) []int64 {
	t.Helper()
	got := ids(readAll(t, s, 8))
	s.Done(math.MaxUint64, math.MaxInt64)
	require.NoError(t, s.Close())
	return got
}

// startupCluster is a topic of 2 partitions whose group g has committed
// the end of a first batch (read to the end, all done), and a second
// batch written after.
func startupCluster(t *testing.T) (c *kafkatest.Cluster, first, second []rec, cfg Config) {
	c = kafkatest.Start(t, 2, "st")
	pr := producer(t, c.Addr)
	first = batch(2, 5, 0, 100)
	produce(t, pr, "st", first, false)
	cfg = Config{Brokers: []string{c.Addr}, Topic: "st", Group: "g7", Decoder: jsonDecoder(t, source.Fail), StopAtEnd: true, CommitInterval: time.Hour}
	require.ElementsMatch(t, recIDs(first), consumeAll(t, openT(t, cfg)))
	require.Equal(t, map[int32]int64{0: 5, 1: 5}, committed(t, c.Addr, "g7", "st"))
	second = batch(2, 3, 10_000, 200)
	produce(t, pr, "st", second, false)
	return c, first, second, cfg
}

// TestCommittedModes: with offsets committed by an earlier run,
// UseCommitted and RequireCommitted go on from them, IgnoreCommitted
// with Earliest reads everything again (and still commits), a
// checkpoint's Resume wins over each.
func TestCommittedModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		committed Committed
		static    bool
		resume    bool
	}{
		{"use", UseCommitted, false, false},
		{"use-static", UseCommitted, true, false},
		{"ignore", IgnoreCommitted, false, false},
		{"ignore-static", IgnoreCommitted, true, false},
		{"require", RequireCommitted, false, false},
		{"require-static", RequireCommitted, true, false},
		{"ignore-resume", IgnoreCommitted, false, true},
		{"require-resume", RequireCommitted, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, first, second, cfg := startupCluster(t)
			cfg.Committed = tc.committed
			if tc.static {
				cfg.Partitions = []int32{0, 1}
			}
			want := recIDs(second)
			if tc.committed == IgnoreCommitted {
				want = append(recIDs(first), want...)
			}
			if tc.resume {
				// A checkpoint of partition 0 at its offset 2, of
				// partition 1 at its end (8).
				cfg.Resume = map[int32]Position{0: {Offset: 2}, 1: {Offset: 8}}
				want = nil
				for _, r := range append(first, second...) {
					if r.part == 0 && r.id != 0 && r.id != 1 {
						want = append(want, r.id)
					}
				}
			}
			assert.ElementsMatch(t, want, consumeAll(t, openT(t, cfg)))
			// Every mode commits what it read (with the checkpoint,
			// nothing of partition 1).
			wantCommits := map[int32]int64{0: 8, 1: 8}
			if tc.resume {
				wantCommits[1] = 5
			}
			assert.Equal(t, wantCommits, committed(t, c.Addr, "g7", "st"))
		})
	}
}

// TestIgnoreCommittedLatest: IgnoreCommitted with Latest reads only what
// is written after the source opened, not what followed the commit;
// UseCommitted with Latest reads that from the commit on.
func TestIgnoreCommittedLatest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		committed Committed
		old       bool // whether the records after the commit are read
	}{{IgnoreCommitted, false}, {UseCommitted, true}} {
		t.Run(tc.committed.String(), func(t *testing.T) {
			t.Parallel()
			c, _, second, cfg := startupCluster(t)
			cfg.Committed, cfg.Start, cfg.StopAtEnd = tc.committed, Latest, false
			cfg.IdleTimeout = 20 * time.Millisecond
			s := openT(t, cfg)
			third := batch(2, 2, 20_000, 300)
			produce(t, producer(t, c.Addr), "st", third, false)
			want := recIDs(third)
			if tc.old {
				want = append(recIDs(second), want...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			dst := make([]byte, 64*s.TupleSize())
			var got []int64
			for len(got) < len(want) {
				n, err := s.FillSome(ctx, dst)
				require.NoError(t, err)
				got = append(got, ids(dst[:n])...)
			}
			assert.ElementsMatch(t, want, got)
		})
	}
}

// TestRequireCommittedWithout: RequireCommitted fails Open, naming the
// partitions, where the group has not committed an offset for each
// partition read (none at all, or some); it needs a Group.
func TestRequireCommittedWithout(t *testing.T) {
	t.Parallel()
	c, _, _, cfg := startupCluster(t)
	cfg.Committed = RequireCommitted
	cfg.Group = "nothing-committed"
	_, err := Open(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group nothing-committed has no committed offset for partitions 0, 1")

	// Partition 1 alone read by a static source of group "half".
	half := cfg
	half.Group, half.Committed, half.Partitions = "half", UseCommitted, []int32{1}
	consumeAll(t, openT(t, half))
	require.Equal(t, map[int32]int64{1: 8}, committed(t, c.Addr, "half", "st"))
	cfg.Group = "half"
	_, err = Open(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group half has no committed offset for partition 0,")
	// A checkpoint's position of partition 0 stands for its commit.
	cfg.Resume = map[int32]Position{0: {Offset: 0}}
	assert.Len(t, consumeAll(t, openT(t, cfg)), 8)

	cfg.Group, cfg.Resume = "", nil
	_, err = Open(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RequireCommitted needs a Group")
}
