package sink

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oracleEscape is a partition value as a path, written from Flink's
// rule (PartitionPathUtils.escapePathName, Hive's): %XX, upper-case hex,
// for the control characters, DEL and " # % ' * / : = ? \ { [ ] ^.
func oracleEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c > 0 && c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func TestPartitionValueEscaping(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"00:00": "00%3A00", "2015-07-15": "2015-07-15", "a/b": "a%2Fb", "k=v": "k%3Dv", "100%": "100%25",
		"é ü": "é ü", "tab\there": "tab%09here", "q?*\"'#": "q%3F%2A%22%27%23", `\{[]^`: "%5C%7B%5B%5D%5E", "a b,c": "a b,c",
	} {
		assert.Equal(t, want, string(AppendPartitionValue(nil, v)), v)
		assert.Equal(t, v, UnescapePartitionValue(want), want)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(1 + r.IntN(255))
		}
		v := string(b)
		assert.Equal(t, oracleEscape(v), string(AppendPartitionValue(nil, v)))
		assert.Equal(t, v, UnescapePartitionValue(oracleEscape(v)))
	}
	// NULL, empty and blank values: the default name
	assert.Equal(t, "c=__DEFAULT_PARTITION__", string(AppendPartitionSegment(nil, "c", "", true, "__DEFAULT_PARTITION__")))
	assert.Equal(t, "c=__DEFAULT_PARTITION__", string(AppendPartitionSegment(nil, "c", "", false, "__DEFAULT_PARTITION__")))
	assert.Equal(t, "c=__DEFAULT_PARTITION__", string(AppendPartitionSegment(nil, "c", "  ", false, "__DEFAULT_PARTITION__")))
	assert.Equal(t, "c=%3A", string(AppendPartitionSegment(nil, "c", ":", false, "__DEFAULT_PARTITION__")))
	assert.Equal(t, "c=__DEFAULT_PARTITION__", string(AppendPartitionSegment(nil, "c", "\t\r\n\x1f", false, "__DEFAULT_PARTITION__")))
	assert.Equal(t, "c=%1F.", string(AppendPartitionSegment(nil, "c", "\x1f.", false, "__DEFAULT_PARTITION__")))
}

// pRow is a row of the oracle: its event time, its partition values
// (nil: NULL) and its line.
type pRow struct {
	ts     int64
	dt, hm *string
	line   string
}

func (r pRow) rel() string {
	seg := func(name string, v *string) string {
		if v == nil || strings.TrimSpace(*v) == "" {
			return name + "=__DEFAULT_PARTITION__"
		}
		return name + "=" + oracleEscape(*v)
	}
	return seg("dt", r.dt) + "/" + seg("hm", r.hm)
}

// randomRows are rows over a few minutes of event time, in order but
// for a little disorder, their partitions the day and the minute, some
// NULL, blank or with characters that a path escapes.
func randomRows(seed uint64, n int) []pRow {
	r := rand.New(rand.NewPCG(seed, 7))
	base := time.Date(2015, 7, 15, 23, 58, 0, 0, time.UTC).UnixMilli()
	var rows []pRow
	for i := range n {
		ts := base + int64(i)*400 - int64(r.IntN(3000))
		tm := time.UnixMilli(ts).UTC()
		dt, hm := tm.Format("2006-01-02"), tm.Format("15:04")
		row := pRow{ts: ts, dt: &dt, hm: &hm, line: fmt.Sprintf("%d,%d\n", i, ts)}
		switch r.IntN(40) {
		case 0:
			row.hm = nil
		case 1:
			blank := " "
			row.dt = &blank
		case 2:
			odd := "a/b=c%d?"
			row.hm = &odd
		}
		rows = append(rows, row)
	}
	return rows
}

func writeRow(t *testing.T, p *Partitioned, r pRow) {
	t.Helper()
	var rel []byte
	rel = AppendPartitionSegment(rel, "dt", deref(r.dt), r.dt == nil, "__DEFAULT_PARTITION__")
	rel = append(rel, '/')
	rel = AppendPartitionSegment(rel, "hm", deref(r.hm), r.hm == nil, "__DEFAULT_PARTITION__")
	require.NoError(t, p.WriteRow(r.ts, rel, []byte(r.line)))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readPartitions is each partition's rows (its data files' lines,
// sorted) and whether it has a _SUCCESS.
func readPartitions(t *testing.T, dir string) (map[string][]string, map[string]bool) {
	t.Helper()
	files, err := ExistingPartitions(dir, "_SUCCESS")
	require.NoError(t, err)
	rows := map[string][]string{}
	for rel, fs := range files {
		for _, f := range fs {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, l := range strings.SplitAfter(string(b), "\n") {
				if l != "" {
					rows[rel] = append(rows[rel], l)
				}
			}
		}
		sort.Strings(rows[rel])
	}
	success := map[string]bool{}
	for rel := range files {
		if _, err := os.Stat(filepath.Join(dir, rel, "_SUCCESS")); err == nil {
			success[rel] = true
		}
	}
	return rows, success
}

func oracleRows(rows []pRow) map[string][]string {
	want := map[string][]string{}
	for _, r := range rows {
		want[r.rel()] = append(want[r.rel()], r.line)
	}
	for k := range want {
		sort.Strings(want[k])
	}
	return want
}

func q10Config(dir string, checkpointed bool) PartitionConfig {
	return PartitionConfig{Dir: dir, Columns: []string{"dt", "hm"}, Trigger: true, Pattern: "$dt $hm:00", Delay: time.Minute,
		SuccessFile: "_SUCCESS", WatermarkDelay: 4000, Unit: time.Millisecond, Checkpointed: checkpointed}
}

// openQ10 is a q10 output in dir, recovered to epoch 1 where checkpointed.
func openQ10(t *testing.T, dir string, ckpt bool) *Partitioned {
	t.Helper()
	p, err := CreatePartitioned(q10Config(dir, ckpt))
	require.NoError(t, err)
	if ckpt {
		require.NoError(t, p.Recover(0, 1, nil))
	}
	return p
}

// TestPartitionedAgainstOracle: random rows land in their partitions'
// files, with or without checkpoints, and every partition is committed
// at the end.
func TestPartitionedAgainstOracle(t *testing.T) {
	t.Parallel()
	for _, ckpt := range []bool{false, true} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("checkpointed %v seed %d", ckpt, seed), func(t *testing.T) {
				rows := randomRows(seed, 1500)
				dir := filepath.Join(t.TempDir(), "out")
				p := openQ10(t, dir, ckpt)
				for i, r := range rows {
					writeRow(t, p, r)
					if ckpt && i%97 == 96 {
						e := p.Epoch()
						require.NoError(t, p.PreCommit(e))
						require.NoError(t, p.Commit(e))
					}
				}
				if !ckpt {
					// nothing is visible before the end
					got, _ := readPartitions(t, dir)
					assert.Empty(t, got)
				}
				require.NoError(t, p.Finish())
				got, success := readPartitions(t, dir)
				want := oracleRows(rows)
				assert.Equal(t, want, got)
				for rel := range want {
					assert.True(t, success[rel], rel)
				}
				assert.Contains(t, want, "dt=__DEFAULT_PARTITION__/hm=23%3A58")
				assert.Contains(t, want, "dt=2015-07-15/hm=a%2Fb%3Dc%25d%3F")
			})
		}
	}
}

// TestPartitionedSuccessWhenWatermarkPasses: under checkpoints a
// partition's success file appears at the commit of the first checkpoint
// whose watermark (the largest event time less the source's delay) is
// past the partition's time plus the commit delay, and not before.
func TestPartitionedSuccessWhenWatermarkPasses(t *testing.T) {
	t.Parallel()
	rows := randomRows(9, 2000)
	dir := filepath.Join(t.TempDir(), "out")
	cfg := q10Config(dir, true)
	p, err := CreatePartitioned(cfg)
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	maxTs := int64(-1 << 62)
	checked := 0
	for i, r := range rows {
		writeRow(t, p, r)
		maxTs = max(maxTs, r.ts)
		if i%50 != 49 {
			continue
		}
		e := p.Epoch()
		require.NoError(t, p.PreCommit(e))
		require.NoError(t, p.Commit(e))
		wm := maxTs - cfg.WatermarkDelay
		_, success := readPartitions(t, dir)
		for rel := range oracleRows(rows[:i+1]) {
			v := strings.Split(rel, "/")
			pt, perr := time.Parse("2006-01-02 15:04", UnescapePartitionValue(strings.TrimPrefix(v[0], "dt="))+" "+UnescapePartitionValue(strings.TrimPrefix(v[1], "hm=")))
			due := perr == nil && wm > pt.UnixMilli()+time.Minute.Milliseconds()
			assert.Equal(t, due, success[rel], "%s at watermark %d (row %d)", rel, wm, i)
			if due {
				checked++
			}
		}
	}
	assert.Positive(t, checked)
	require.NoError(t, p.Finish())
	_, success := readPartitions(t, dir)
	for rel := range oracleRows(rows) {
		assert.True(t, success[rel], rel)
	}
}

// TestPartitionedRecover: a run that dies after a checkpoint, restarted
// from it, writes the rows after it again and ends with the files of a
// run without a crash: epochs after the checkpoint removed, a
// pre-committed one rolled forward, a success file of a partition whose
// parts were removed taken back.
func TestPartitionedRecover(t *testing.T) {
	t.Parallel()
	rows := randomRows(5, 1200)
	const every = 100 // rows per epoch
	clean := filepath.Join(t.TempDir(), "clean")
	p, err := CreatePartitioned(q10Config(clean, true))
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	for i, r := range rows {
		writeRow(t, p, r)
		if i%every == every-1 {
			e := p.Epoch()
			require.NoError(t, p.PreCommit(e))
			require.NoError(t, p.Commit(e))
		}
	}
	require.NoError(t, p.Finish())
	wantRows, wantSuccess := readPartitions(t, clean)
	assert.Equal(t, oracleRows(rows), wantRows)

	for _, tc := range []struct {
		name string
		// the crash: after epoch crash's rows, with pre-committed
		// (and committed) as the last epoch got
		crash, restore         uint64
		preCommit, commitCrash bool
	}{
		{"in the middle of an epoch", 6, 5, false, false},
		{"after a pre-commit, its checkpoint durable", 6, 6, true, false},
		{"after a pre-commit, its checkpoint lost", 6, 5, true, false},
		{"after a commit, restored from an older checkpoint", 6, 4, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			p, err := CreatePartitioned(q10Config(dir, true))
			require.NoError(t, err)
			require.NoError(t, p.Recover(0, 1, nil))
			for i, r := range rows[:int(tc.crash)*every] {
				writeRow(t, p, r)
				if i%every == every-1 {
					e := p.Epoch()
					if e == tc.crash && !tc.preCommit {
						break
					}
					require.NoError(t, p.PreCommit(e))
					if e == tc.crash && !tc.commitCrash {
						break
					}
					require.NoError(t, p.Commit(e))
				}
			}
			// kill -9: nothing more runs; a new process restores
			q, err := CreatePartitioned(q10Config(dir, true))
			require.NoError(t, err)
			var notes []string
			require.NoError(t, q.Recover(tc.restore, tc.crash+1, func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }))
			for i := int(tc.restore) * every; i < len(rows); i++ {
				writeRow(t, q, rows[i])
				if i%every == every-1 {
					e := q.Epoch()
					require.NoError(t, q.PreCommit(e))
					require.NoError(t, q.Commit(e))
				}
			}
			require.NoError(t, q.Finish())
			got, success := readPartitions(t, dir)
			assert.Equal(t, wantRows, got, strings.Join(notes, "\n"))
			assert.Equal(t, wantSuccess, success)
			leftovers, err := filepath.Glob(filepath.Join(dir, "*", "*", ".*"))
			require.NoError(t, err)
			assert.Empty(t, leftovers)
		})
	}
}

// TestPartitionedRefusals: a path that is a file, an input inside the
// directory.
func TestPartitionedRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	_, err := CreatePartitioned(PartitionConfig{Dir: f, Columns: []string{"a"}})
	require.ErrorIs(t, err, ErrUsage)
	_, err = CreatePartitioned(PartitionConfig{Dir: dir, Columns: []string{"a"}, Inputs: []string{f}})
	require.ErrorIs(t, err, ErrSameFile)
}

// TestPartitionedRoutingAllocates: a row of a partition seen before is
// routed and copied without an allocation (the map is read by the
// directory's bytes; the row's buffer is the last one's, copied).
func TestPartitionedRoutingAllocates(t *testing.T) {
	p, err := CreatePartitioned(q10Config(filepath.Join(t.TempDir(), "out"), false))
	require.NoError(t, err)
	defer p.Abort()
	rel, line := []byte("dt=2015-07-15/hm=00%3A00"), []byte("1,2\n")
	require.NoError(t, p.WriteRow(1, rel, line))
	allocs := testing.AllocsPerRun(1000, func() {
		if err := p.WriteRow(2, rel, line); err != nil {
			t.Fatal(err)
		}
		p.Copy()
	})
	assert.Zero(t, allocs)
}

// TestPartitionedSuccessWaitsForTheFiles: a partition whose rows came
// after a checkpoint's pre-commit (its files in the next epoch) is not
// committed by that checkpoint's commit, however far the watermark is
// past it, but by the next one's.
func TestPartitionedSuccessWaitsForTheFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	p, err := CreatePartitioned(q10Config(dir, true))
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	late := []byte("dt=2015-07-15/hm=00%3A00")
	now := time.Date(2015, 7, 15, 1, 0, 0, 0, time.UTC).UnixMilli()
	require.NoError(t, p.WriteRow(now, []byte("dt=2015-07-15/hm=01%3A00"), []byte("a\n")))
	require.NoError(t, p.PreCommit(1))
	require.NoError(t, p.WriteRow(now-3_600_000, late, []byte("late\n"))) // an hour behind the watermark, in epoch 2
	require.NoError(t, p.Commit(1))
	_, err = os.Stat(filepath.Join(dir, string(late), "_SUCCESS"))
	assert.ErrorIs(t, err, os.ErrNotExist, "committed before its file")
	require.NoError(t, p.PreCommit(2))
	require.NoError(t, p.Commit(2))
	_, err = os.Stat(filepath.Join(dir, string(late), "_SUCCESS"))
	assert.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, string(late), "data.part-00000000000000000002"))
	assert.NoError(t, err)
}
