package sink

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appendRecord appends r as WriteRecords reads it.
func appendRecord(dst []byte, r pRow) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, RecordHeader)...)
	dst = AppendPartitionSegment(dst, "dt", deref(r.dt), r.dt == nil, "__DEFAULT_PARTITION__")
	dst = append(dst, '/')
	dst = AppendPartitionSegment(dst, "hm", deref(r.hm), r.hm == nil, "__DEFAULT_PARTITION__")
	rel := len(dst) - n - RecordHeader
	dst = append(dst, r.line...)
	PutRecordHeader(dst[n:], r.ts, rel, len(r.line))
	return dst
}

// readPartitionFiles is each partition's files (the parts by epoch)
// concatenated, byte for byte.
func readPartitionFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := ExistingPartitions(dir, "_SUCCESS")
	require.NoError(t, err)
	out := map[string]string{}
	for rel, fs := range files {
		sort.Strings(fs)
		for _, f := range fs {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			out[rel] += string(b)
		}
	}
	return out
}

// concatRows is the oracle of readPartitionFiles: each partition's lines
// in the order written.
func concatRows(rows []pRow) map[string]string {
	want := map[string]string{}
	for _, r := range rows {
		want[r.rel()] += r.line
	}
	return want
}

// longRowsOutput is a q10 output in a new directory dir (recovered to
// epoch 1 where checkpointed) and n rows for it with lines of up to 2,400
// bytes more (r's), so that batches of them pass maxPending.
func longRowsOutput(t *testing.T, r *rand.Rand, seed uint64, n int, ckpt bool) ([]pRow, string, *Partitioned) {
	t.Helper()
	rows := randomRows(seed, n)
	for i := range rows {
		rows[i].line = strings.Repeat(string(rune('a'+i%26)), r.IntN(2400)) + rows[i].line
	}
	dir := filepath.Join(t.TempDir(), "out")
	p := openQ10(t, dir, ckpt)
	return rows, dir, p
}

// TestPartitionedWriterBatches: rows handed over in batches of any size,
// the caller's buffer overwritten as soon as WriteRecords returns, some
// batches with bytes past their last record, enough of them for the
// copies placed to pass maxPending and the hand-over to run them, others
// copied by goroutines of their own (Copy) as the batches keep coming, end
// in the files that writing each row at once makes, byte for byte, in
// order; under checkpoints each checkpoint's parts hold every row handed
// over before it.
func TestPartitionedWriterBatches(t *testing.T) {
	t.Parallel()
	// Enough rows for bursts past maxPending by default; more with
	// SABER_HX_LONG_TESTS=1.
	n := testenv.Scale(7000, 20000)
	for _, ckpt := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointed %v", ckpt), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(3, 4))
			rows, dir, p := longRowsOutput(t, r, 11, n, ckpt)
			var enc []byte
			bursts, big := 0, 0
			var copiers sync.WaitGroup
			defer copiers.Wait()
			for i := 0; i < len(rows); {
				k := min(len(rows)-i, 1+r.IntN(300))
				if big == 0 && (r.IntN(30) == 0 || bursts == 0 && i >= len(rows)/3) {
					bursts, big = bursts+1, 3
				}
				if big > 0 {
					// batches of half maxPending or more, one after
					// another: past maxPending before any copy runs
					big--
					k = min(len(rows)-i, 2000)
				}
				enc = enc[:0]
				for _, row := range rows[i : i+k] {
					enc = appendRecord(enc, row)
				}
				if r.IntN(4) == 0 {
					enc = append(enc, "tail\x00\x00"...) // past the last record: skipped
				}
				require.NoError(t, p.WriteRecords(enc))
				for j := range enc {
					enc[j] = 0xff
				}
				i += k
				if r.IntN(3) == 0 {
					copiers.Go(p.Copy) // as a pipeline's workers do
				}
				if ckpt && r.IntN(10) == 0 {
					e := p.Epoch()
					require.NoError(t, p.PreCommit(e))
					require.NoError(t, p.Commit(e))
					assert.Equal(t, concatRows(rows[:i]), readPartitionFiles(t, dir), "after checkpoint %d", e)
				}
			}
			require.NoError(t, p.Flush())
			want := concatRows(rows)
			got := p.Partitions()
			assert.ElementsMatch(t, mapKeys(want), got)
			require.NoError(t, p.Finish())
			assert.Equal(t, want, readPartitionFiles(t, dir))
			_, success := readPartitions(t, dir)
			assert.Len(t, success, len(want))
		})
	}
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPartitionedWriterError: an error of the hand-over (a partition's
// directory where a file is) or of a copy (a file closed under it) is
// returned by that call or the next, however many rows were handed over
// since, and nothing is written after it.
func TestPartitionedWriterError(t *testing.T) {
	t.Parallel()
	good, bad := []byte("dt=2015-07-15/hm=00%3A00"), []byte("dt=2015-07-15/hm=00%3A01")
	record := func(rel []byte, line string) []byte {
		b := make([]byte, RecordHeader)
		PutRecordHeader(b, 1, len(rel), len(line))
		return append(append(b, rel...), line...)
	}

	t.Run("a file where a partition's directory is", func(t *testing.T) {
		t.Parallel()
		for _, ckpt := range []bool{false, true} {
			dir := filepath.Join(t.TempDir(), "out")
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "dt=2015-07-15"), 0o777))
			require.NoError(t, os.WriteFile(filepath.Join(dir, string(bad)), nil, 0o644))
			p := openQ10(t, dir, ckpt)
			require.NoError(t, p.WriteRecords(record(good, "a\n")))
			err := p.WriteRecords(append(record(bad, "b\n"), record([]byte("dt=2015-07-16/hm=00%3A00"), "c\n")...))
			require.Error(t, err, "routed as handed over")
			assert.Contains(t, err.Error(), "create partition dt=2015-07-15/hm=00%3A01")
			assert.ErrorIs(t, p.Flush(), err)
			assert.ErrorIs(t, p.WriteRecords(record(good, "d\n")), err)
			if ckpt {
				assert.ErrorIs(t, p.PreCommit(p.Epoch()), err)
			}
			assert.ErrorIs(t, p.Finish(), err)
			assert.Equal(t, []string{string(good)}, p.Partitions(), "a partition after the error")
			require.NoError(t, p.Abort())
			_, err = os.Stat(filepath.Join(dir, "dt=2015-07-16"))
			assert.ErrorIs(t, err, os.ErrNotExist)
		}
	})

	t.Run("a file closed", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "out")
		p, err := CreatePartitioned(q10Config(dir, false))
		require.NoError(t, err)
		require.NoError(t, p.WriteRecords(record(good, "a\n")))
		require.NoError(t, p.Flush())
		p.mu.Lock()
		require.NoError(t, p.parts[string(good)].file.tmp.Close())
		p.mu.Unlock()
		big := strings.Repeat("x", 64<<10) + "\n" // 100 of them past maxPending: copied by the hand-over
		var err2 error
		for i := 0; i < 100 && err2 == nil; i++ {
			err2 = p.WriteRecords(record(good, big))
		}
		if err2 == nil {
			err2 = p.Flush()
		}
		require.Error(t, err2)
		assert.Contains(t, err2.Error(), filepath.Join(dir, string(good)))
		assert.ErrorIs(t, err2, os.ErrClosed)
		assert.ErrorIs(t, p.Flush(), os.ErrClosed)
		assert.ErrorIs(t, p.Finish(), os.ErrClosed)
		require.NoError(t, p.Abort())
		_, err = os.Stat(filepath.Join(dir, string(good), dataName))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

// TestPartitionedNoGoroutineLeft: the output starts no goroutine of its
// own (Finish, a write after it, Abort), and an Abort from another
// goroutine while rows keep coming, and are copied, ends the hand-over
// with the abort and writes nothing after it.
func TestPartitionedNoGoroutineLeft(t *testing.T) {
	rel, line := []byte("dt=2015-07-15/hm=00%3A00"), []byte("1,2\n")
	before := runtime.NumGoroutine()
	for _, ckpt := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "out")
		p := openQ10(t, dir, ckpt)
		require.NoError(t, p.WriteRow(1, rel, line))
		require.NoError(t, p.Finish())
		testenv.NoGoroutinesLeft(t, before)
		require.NoError(t, p.WriteRow(2, rel, line))
		require.NoError(t, p.Abort())
		testenv.NoGoroutinesLeft(t, before)
		assert.ErrorContains(t, p.WriteRow(3, rel, line), "aborted")
		testenv.NoGoroutinesLeft(t, before)
	}

	// Abort from another goroutine while rows keep coming: the caller's
	// next write (or its wait for a copy) returns the abort.
	dir := filepath.Join(t.TempDir(), "out")
	p, err := CreatePartitioned(q10Config(dir, false))
	require.NoError(t, err)
	enc := make([]byte, RecordHeader)
	big := bytes.Repeat([]byte("y"), 256<<10)
	PutRecordHeader(enc, 1, len(rel), len(big))
	enc = append(append(enc, rel...), big...)
	started, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := p.WriteRecords(enc); err != nil {
				stopped <- err
				return
			}
			if i%4 == 0 {
				go p.Copy()
			}
			if i == 100 {
				close(started)
			}
		}
	}()
	<-started
	require.NoError(t, p.Abort())
	assert.ErrorContains(t, <-stopped, "aborted")
	testenv.NoGoroutinesLeft(t, before)
	_, err = os.Stat(filepath.Join(dir, string(rel), dataName))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestPartitionedWriteRecordsAllocates: in a steady stream of batches of
// partitions seen before, each copied once handed over (Copy, as a
// pipeline's workers do), a batch's hand-over and its rows' writes
// allocate nothing.
func TestPartitionedWriteRecordsAllocates(t *testing.T) {
	for _, ckpt := range []bool{false, true} {
		p := openQ10(t, filepath.Join(t.TempDir(), "out"), ckpt)
		var enc []byte
		for i, row := range randomRows(1, 200) {
			if i%7 != 0 { // runs of a partition, and changes of it
				row.dt, row.hm = ptr("2015-07-15"), ptr("00:00")
			}
			enc = appendRecord(enc, row)
		}
		write := func() {
			if err := p.WriteRecords(enc); err != nil {
				t.Fatal(err)
			}
			p.Copy()
		}
		for range 2000 {
			write()
		}
		require.NoError(t, p.Flush())
		assert.Zero(t, testing.AllocsPerRun(1000, write), "checkpointed %v", ckpt)
		require.NoError(t, p.Finish())
		require.NoError(t, p.Abort())
	}
}

func ptr(s string) *string { return &s }

// TestPartitionedCommitSeesRowsHandedOver: a row handed over after a
// checkpoint's pre-commit, to a partition that the checkpoint's
// watermark passed, keeps the checkpoint's commit from committing the
// partition, though its copy has not run yet.
func TestPartitionedCommitSeesRowsHandedOver(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		dir := filepath.Join(t.TempDir(), "out")
		p, err := CreatePartitioned(q10Config(dir, true))
		require.NoError(t, err)
		require.NoError(t, p.Recover(0, 1, nil))
		rel := []byte("dt=2015-07-15/hm=00%3A00")
		now := time.Date(2015, 7, 15, 1, 0, 0, 0, time.UTC).UnixMilli()
		require.NoError(t, p.WriteRow(now-3_600_000, rel, []byte("a\n")))
		require.NoError(t, p.WriteRow(now, []byte("dt=2015-07-15/hm=01%3A00"), []byte("b\n")))
		require.NoError(t, p.PreCommit(1))
		require.NoError(t, p.WriteRow(now-3_600_000, rel, []byte("late\n")))
		require.NoError(t, p.Commit(1))
		_, err = os.Stat(filepath.Join(dir, string(rel), "_SUCCESS"))
		require.ErrorIs(t, err, os.ErrNotExist, "committed with a row of epoch 2 (try %d)", i)
		require.NoError(t, p.PreCommit(2))
		require.NoError(t, p.Commit(2))
		_, err = os.Stat(filepath.Join(dir, string(rel), "_SUCCESS"))
		require.NoError(t, err)
		require.NoError(t, p.Finish())
	}
}

// TestPartitionedGiveRecords: batches given (GiveRecords) among batches
// copied (WriteRecords), some past maxPending together, end in the same
// files, in order, as WriteRecords alone; each spare given back is empty,
// not the buffer just given, and the caller overwrites it whole at once:
// were a copy still pending in it, its rows would be lost (and -race
// would see the copy read it).
func TestPartitionedGiveRecords(t *testing.T) {
	t.Parallel()
	n := testenv.Scale(5000, 20000)
	for _, ckpt := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointed %v", ckpt), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(5, 6))
			rows, dir, p := longRowsOutput(t, r, 13, n, ckpt)
			var enc, copied []byte
			spares := 0
			for i := 0; i < len(rows); {
				k := min(len(rows)-i, 1+r.IntN(300))
				if r.IntN(20) == 0 {
					k = min(len(rows)-i, 2000) // half maxPending or more
				}
				give := r.IntN(3) != 0
				b := copied[:0]
				if give {
					b = enc[:0]
				}
				for _, row := range rows[i : i+k] {
					b = appendRecord(b, row)
				}
				if r.IntN(4) == 0 {
					b = append(b, "tail\x00\x00"...) // past the last record: skipped
				}
				i += k
				if !give {
					require.NoError(t, p.WriteRecords(b))
					copied = b
					for j := range copied {
						copied[j] = 0xff
					}
					continue
				}
				if r.IntN(8) == 0 {
					// every copy done: the next spare is one of their
					// buffers
					require.NoError(t, p.Flush())
				}
				first := &b[:1][0]
				spare, err := p.GiveRecords(b)
				require.NoError(t, err)
				enc = spare
				if cap(spare) == 0 {
					continue
				}
				spares++
				assert.Empty(t, spare)
				assert.NotSame(t, first, &spare[:1][0], "the buffer just given back as the spare")
				full := spare[:cap(spare)]
				for j := range full {
					full[j] = 0xee
				}
				if ckpt && r.IntN(10) == 0 {
					e := p.Epoch()
					require.NoError(t, p.PreCommit(e))
					require.NoError(t, p.Commit(e))
					assert.Equal(t, concatRows(rows[:i]), readPartitionFiles(t, dir), "after checkpoint %d", e)
				}
			}
			assert.NotZero(t, spares, "no spare given back")
			require.NoError(t, p.Finish())
			assert.Equal(t, concatRows(rows), readPartitionFiles(t, dir))
		})
	}
}

// TestPartitionedGiveRecordsErrors: after an Abort, or the output's
// error (its own hand-over's too), GiveRecords keeps nothing: the error,
// and the buffer back.
func TestPartitionedGiveRecordsErrors(t *testing.T) {
	good, bad := []byte("dt=2015-07-15/hm=00%3A00"), []byte("dt=2015-07-15/hm=00%3A01")
	record := func(rel []byte, line string) []byte {
		b := make([]byte, RecordHeader)
		PutRecordHeader(b, 1, len(rel), len(line))
		return append(append(b, rel...), line...)
	}
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "dt=2015-07-15"), 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(dir, string(bad)), nil, 0o644))
	p, err := CreatePartitioned(q10Config(dir, false))
	require.NoError(t, err)
	_, err = p.GiveRecords(record(good, "a\n"))
	require.NoError(t, err)
	b := record(bad, "b\n")
	spare, werr := p.GiveRecords(b)
	require.Error(t, werr, "routed as given")
	assert.Same(t, &b[0], &spare[0])
	assert.ErrorIs(t, p.Flush(), werr)
	b = record(good, "c\n")
	spare, err = p.GiveRecords(b)
	assert.ErrorIs(t, err, werr)
	assert.Same(t, &b[0], &spare[0])
	assert.ErrorIs(t, p.Finish(), werr)
	require.NoError(t, p.Abort())
	spare, err = p.GiveRecords(b)
	assert.ErrorContains(t, err, "aborted")
	assert.Same(t, &b[0], &spare[0])
	assert.Equal(t, []string{string(good)}, p.Partitions())
}

// TestPartitionedGiveRecordsAllocates: in a steady stream of batches
// given, each filled in the spare of the one before, a batch's hand-over
// and its rows' writes allocate nothing; the free buffers stay bounded.
func TestPartitionedGiveRecordsAllocates(t *testing.T) {
	for _, ckpt := range []bool{false, true} {
		p := openQ10(t, filepath.Join(t.TempDir(), "out"), ckpt)
		var tmpl []byte
		for i, row := range randomRows(1, 200) {
			if i%7 != 0 {
				row.dt, row.hm = ptr("2015-07-15"), ptr("00:00")
			}
			tmpl = appendRecord(tmpl, row)
		}
		bufs := [][]byte{make([]byte, 0, len(tmpl)), make([]byte, 0, len(tmpl))}
		var enc []byte
		give := func() {
			if enc == nil {
				enc, bufs = bufs[0], bufs[1:] // the test's own, until the output gives back
			}
			spare, err := p.GiveRecords(append(enc[:0], tmpl...))
			if err != nil {
				t.Fatal(err)
			}
			enc = spare
			// the batch copied: the next one's spare is this one's
			// buffer
			p.Copy()
		}
		for range 2000 {
			give()
		}
		require.NotNil(t, enc)
		assert.Zero(t, testing.AllocsPerRun(1000, give), "checkpointed %v", ckpt)
		p.mu.Lock()
		assert.LessOrEqual(t, len(p.free), maxFree)
		assert.LessOrEqual(t, p.freeCap, maxFreeCap)
		p.mu.Unlock()
		require.NoError(t, p.Finish())
		require.NoError(t, p.Abort())
	}
}

// TestPartitionedFreeBuffers: the written buffers kept for GiveRecords
// are at most maxFree, of at most maxFreeCap in all, and none grown far
// past the batch it held.
func TestPartitionedFreeBuffers(t *testing.T) {
	p, err := CreatePartitioned(q10Config(filepath.Join(t.TempDir(), "out"), false))
	require.NoError(t, err)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release(make([]byte, 10, 1<<20)) // 1 MiB for 10 bytes: dropped
	assert.Empty(t, p.free)
	p.release(make([]byte, 10, 1<<10)) // small: kept whatever its use
	p.release(make([]byte, 300<<10, 1<<20))
	assert.Len(t, p.free, 2)
	assert.Equal(t, 1<<10+1<<20, p.freeCap)
	for range maxFreeCap>>20 + 2 {
		p.release(make([]byte, 1<<20))
	}
	// 1 KiB short of maxFreeCap: the last MiB past it
	assert.Len(t, p.free, maxFreeCap>>20, "past maxFreeCap")
	assert.Equal(t, maxFreeCap-1<<20+1<<10, p.freeCap)
	p.free, p.freeCap = nil, 0
	for range 2 * maxFree {
		p.release(make([]byte, 100))
	}
	assert.Len(t, p.free, maxFree)
	for _, b := range p.free {
		assert.Empty(t, b)
	}
}

// TestPartitionedKeepsFewFilesOpen: rows of many partitions, one after
// another in turn, end in their files as written, while, without
// checkpoints, no more than maxOpen partitions keep their file open once
// the copies are done (under checkpoints an epoch's parts stay open until
// its pre-commit).
func TestPartitionedKeepsFewFilesOpen(t *testing.T) {
	t.Parallel()
	for _, ckpt := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "out")
		p := openQ10(t, dir, ckpt)
		var rows []pRow
		for i := range 600 {
			dt, hm := "2015-07-16", fmt.Sprintf("00:%02d", i%50)
			rows = append(rows, pRow{ts: int64(i), dt: &dt, hm: &hm, line: fmt.Sprintf("%d\n", i)})
			writeRow(t, p, rows[i])
			if i%3 == 0 {
				p.Copy()
			}
			if !ckpt {
				p.mu.Lock()
				// a partition past maxOpen keeps its file while its
				// copy is pending, never more than one here
				assert.LessOrEqual(t, len(p.open), maxOpen+1)
				p.mu.Unlock()
			}
		}
		require.NoError(t, p.Flush())
		p.mu.Lock()
		open := len(p.open)
		p.mu.Unlock()
		if !ckpt {
			assert.Equal(t, maxOpen, open)
			assert.Equal(t, maxOpen, openFDsUnder(t, dir))
		} else {
			assert.Zero(t, open)
		}
		require.NoError(t, p.Finish())
		got, _ := readPartitions(t, dir)
		assert.Equal(t, oracleRows(rows), got, "checkpointed %v", ckpt)
	}
}

// record is a record of one row of partition rel (WriteRecords' form).
func record(rel, line string) []byte {
	b := make([]byte, RecordHeader)
	PutRecordHeader(b, 1, len(rel), len(line))
	return append(append(b, rel...), line...)
}

// TestPartitionedBatchOfManyPartitions: one batch of rows of 100
// partitions, no copy run by anyone else, ends in their files; without
// checkpoints no more than maxOpen files are open once it is handed
// over (placed in segments, each segment's copies run before the next
// opens more files), where every partition's would be.
func TestPartitionedBatchOfManyPartitions(t *testing.T) {
	t.Parallel()
	for _, ckpt := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "out")
		p := openQ10(t, dir, ckpt)
		var enc []byte
		var rows []pRow
		for i := range 130 {
			dt, hm := "2015-07-16", fmt.Sprintf("%02d:%02d", i/60, i%60)
			if i%4 == 3 {
				hm = "00:00" // one partition again and again
			}
			row := pRow{ts: int64(i), dt: &dt, hm: &hm, line: fmt.Sprintf("%d\n", i)}
			rows = append(rows, row)
			enc = appendRecord(enc, row)
		}
		require.NoError(t, p.WriteRecords(enc))
		if !ckpt {
			assert.LessOrEqual(t, openFDsUnder(t, dir), maxOpen)
		}
		require.NoError(t, p.Finish())
		got, _ := readPartitions(t, dir)
		assert.Equal(t, oracleRows(rows), got, "checkpointed %v", ckpt)
	}
}

// TestPartitionedWriteThroughError: a partition whose file is written
// through fails (its data a link to /dev/full): GiveRecords keeps
// nothing (the spare is the buffer given, no copy of it queued), and
// nothing is written after the error, neither to a partition written
// through later in the batch (a FIFO) nor to a regular one before it.
func TestPartitionedWriteThroughError(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	full, fifo, regular := "dt=2015-07-16/hm=00%3A00", "dt=2015-07-16/hm=00%3A01", "dt=2015-07-16/hm=00%3A02"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, full), 0o777))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, fifo), 0o777))
	require.NoError(t, os.Symlink("/dev/full", filepath.Join(dir, full, dataName)))
	fpath := filepath.Join(dir, fifo, dataName)
	require.NoError(t, syscall.Mkfifo(fpath, 0o666))
	// a raw non-blocking reader, so that the output's open for writing
	// does not wait, nor the test's read below (Go's poller would)
	rd, err := syscall.Open(fpath, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer syscall.Close(rd)
	p, err := CreatePartitioned(q10Config(dir, false))
	require.NoError(t, err)
	enc := append(append(record(regular, "r\n"), record(full, "a\n")...), record(fifo, "after-error\n")...)
	spare, err := p.GiveRecords(enc)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	require.NotZero(t, cap(spare))
	assert.Same(t, &enc[0], &spare[:1][0], "on an error the spare is the buffer given")
	p.mu.Lock()
	assert.Equal(t, p.head, len(p.jobs), "a copy of the buffer kept")
	p.mu.Unlock()
	buf := make([]byte, 100)
	n, rerr := syscall.Read(rd, buf)
	assert.ErrorIs(t, rerr, syscall.EAGAIN, "written after the first error: %q", buf[:max(n, 0)])
	assert.ErrorIs(t, p.Flush(), syscall.ENOSPC)
	require.NoError(t, p.Abort())
	_, err = os.Stat(filepath.Join(dir, regular, dataName))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestPartitionedCopyQueueStaysBounded: with no goroutine calling Copy,
// the hand-over runs copies only down to maxPending, so the queue never
// empties; its slice stays near the copies queued, not the batches
// handed over.
func TestPartitionedCopyQueueStaysBounded(t *testing.T) {
	t.Parallel()
	p, err := CreatePartitioned(q10Config(filepath.Join(t.TempDir(), "out"), false))
	require.NoError(t, err)
	rec := record("dt=2015-07-16/hm=00%3A00", strings.Repeat("x", 1000)+"\n")
	n := testenv.Scale(20000, 40000)
	for range n {
		require.NoError(t, p.WriteRecords(rec))
	}
	p.mu.Lock()
	queued, c := len(p.jobs)-p.head, cap(p.jobs)
	p.mu.Unlock()
	assert.Greater(t, queued, 1000, "copies queued past maxPending's reach")
	assert.Less(t, c, 4*queued, "the queue's slice grew with the %d batches", n)
	require.NoError(t, p.Finish())
}
