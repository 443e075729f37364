package ysb

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/sink"
)

func TestResultsCSVRoundTrip(t *testing.T) {
	x, y := mustUUID(t, idX), mustUUID(t, idY)
	rows := []Row{{-10000, x, 3, -1}, {0, x, 1, 0}, {0, y, 33333, 9999}, {1 << 40, y, 1, 1<<40 + 5}}
	var buf bytes.Buffer
	require.NoError(t, WriteResultsCSV(&buf, rows))
	assert.Equal(t, ResultsHeader+"\n"+
		"-10000,"+idX+",3,-1\n"+
		"0,"+idX+",1,0\n"+
		"0,"+idY+",33333,9999\n"+
		"1099511627776,"+idY+",1,1099511627781\n", buf.String())
	back, err := ReadResultsCSV(&buf, "out.csv")
	require.NoError(t, err)
	assert.Equal(t, rows, back)

	back, err = ReadResultsCSV(strings.NewReader(ResultsHeader+"\r\n0,"+idX+",1,2\r\n\r\n"), "out.csv")
	require.NoError(t, err)
	assert.Equal(t, []Row{{0, x, 1, 2}}, back)

	require.NoError(t, WriteResultsCSV(&buf, nil))
	back, err = ReadResultsCSV(&buf, "out.csv")
	require.NoError(t, err)
	assert.Empty(t, back)
}

func TestReadResultsCSVErrors(t *testing.T) {
	h := ResultsHeader + "\n"
	for _, tc := range []struct{ in, want string }{
		{"", "out.csv: empty file"},
		{"window_start,campaign_id,count\n", "out.csv line 1: want header"},
		{h + "0," + idX + ",1\n", "out.csv line 2: want 4 fields"},
		{h + "0," + idX + ",1,2\nx," + idX + ",1,2\n", `out.csv line 3: bad window_start "x"`},
		{h + "0,nope,1,2\n", `out.csv line 2: bad campaign_id "nope"`},
		{h + "0," + idX + ",1.5,2\n", `out.csv line 2: bad count "1.5"`},
		{h + "0," + idX + ",1,\n", `out.csv line 2: bad max_event_time ""`},
	} {
		_, err := ReadResultsCSV(strings.NewReader(tc.in), "out.csv")
		require.Error(t, err, "input %q", tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteResultsCSVError(t *testing.T) {
	err := WriteResultsCSV(failWriter{}, []Row{{}})
	assert.ErrorContains(t, err, "disk full")
}

func TestOpenEvents(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		size   int
		tuples int64
		want   string
	}{
		{0, 0, ""},
		{128 * 3, 3, ""},
		{1000, 0, "events.bin: 1000 bytes is not a whole number of 128-byte tuples (104 trailing bytes)"},
	} {
		path := filepath.Join(dir, "events.bin")
		require.NoError(t, os.WriteFile(path, make([]byte, tc.size), 0o644))
		f, n, err := OpenEvents(path)
		if tc.want != "" {
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, f)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.tuples, n)
		require.NoError(t, f.Close())
	}

	_, _, err := OpenEvents(filepath.Join(dir, "missing.bin"))
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "missing.bin")

	_, _, err = OpenEvents(dir)
	assert.ErrorContains(t, err, "is a directory")
}

func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got)
}

func TestGenerateFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := GenConfig{Campaigns: 3, AdsPerCampaign: 4, Seed: 11, StartMs: 100, TuplesPerMs: 7}
	events, camps := filepath.Join(dir, "events.bin"), filepath.Join(dir, "campaigns.csv")
	// More than one chunk, not a whole number of chunks.
	const n = genChunk/TupleSize*2 + 77
	require.NoError(t, GenerateFiles(ctx, events, camps, n, cfg))
	assertOnlyFiles(t, dir, "events.bin", "campaigns.csv")

	f, tuples, err := OpenEvents(events)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, int64(n), tuples)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	g := newGen(t, cfg)
	want := make([]byte, n*TupleSize)
	g.Fill(want, 0)
	assert.True(t, bytes.Equal(want, got), "events file differs from Fill")

	c, err := LoadCampaigns(camps)
	require.NoError(t, err)
	assert.Equal(t, g.Campaigns(), c)

	// Zero tuples: an empty events file, still a table.
	require.NoError(t, GenerateFiles(ctx, events, camps, 0, cfg))
	_, tuples, err = OpenEvents(events)
	require.NoError(t, err)
	assert.Zero(t, tuples)

	// Invalid config: nothing written.
	empty := t.TempDir()
	err = GenerateFiles(ctx, filepath.Join(empty, "e.bin"), filepath.Join(empty, "c.csv"), 10, GenConfig{})
	assert.ErrorContains(t, err, "campaigns 0: need at least 1")
	assertOnlyFiles(t, empty)

	// Campaigns path in a missing directory: the events temp file is removed too.
	err = GenerateFiles(ctx, filepath.Join(empty, "e.bin"), filepath.Join(empty, "no", "c.csv"), 10, cfg)
	require.Error(t, err)
	assert.ErrorIs(t, err, sink.ErrUsage)
	assertOnlyFiles(t, empty)
}

// TestGenerateFilesSameFile: --out X --campaigns X is refused, whatever
// spells X, and nothing is written or lost.
func TestGenerateFilesSameFile(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultGenConfig()
	dir := t.TempDir()
	e := filepath.Join(dir, "e.bin")
	require.NoError(t, os.WriteFile(e, []byte("old"), 0o644))
	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(e, hard))
	soft := filepath.Join(dir, "soft")
	require.NoError(t, os.Symlink("e.bin", soft))
	for _, pair := range [][2]string{
		{e, e},
		{e, hard},
		{soft, e},
		{filepath.Join(dir, "new"), filepath.Join(dir, ".", "new")}, // a new path, twice
	} {
		err := GenerateFiles(ctx, pair[0], pair[1], 10, cfg)
		require.Error(t, err, "%v", pair)
		assert.ErrorIs(t, err, sink.ErrUsage)
		assert.Contains(t, err.Error(), "same file")
		b, err := os.ReadFile(e)
		require.NoError(t, err)
		assert.Equal(t, "old", string(b))
		assertOnlyFiles(t, dir, "e.bin", "hard", "soft")
	}
	err := GenerateFiles(ctx, "", filepath.Join(dir, "c.csv"), 10, cfg)
	assert.ErrorIs(t, err, sink.ErrUsage)
}

// TestGenerateFilesCancelled: a cancelled generate commits nothing.
func TestGenerateFilesCancelled(t *testing.T) {
	dir := t.TempDir()
	e, c := filepath.Join(dir, "e.bin"), filepath.Join(dir, "c.csv")
	require.NoError(t, os.WriteFile(e, []byte("old events"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := GenerateFiles(ctx, e, c, genChunk/TupleSize*3, DefaultGenConfig())
	assert.ErrorIs(t, err, context.Canceled)
	b, err := os.ReadFile(e)
	require.NoError(t, err)
	assert.Equal(t, "old events", string(b))
	assertOnlyFiles(t, dir, "e.bin")
}

// TestGenerateFilesToStream: events written through a pipe; the campaigns
// table is in place before the first tuple arrives.
func TestGenerateFilesToStream(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "c.csv")
	fifo := filepath.Join(dir, "events")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	cfg := DefaultGenConfig()
	const n = 5000
	type got struct {
		tableFirst bool
		events     []byte
		err        error
	}
	done := make(chan got, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			done <- got{err: err}
			return
		}
		defer f.Close()
		var one [1]byte
		if _, err := io.ReadFull(f, one[:]); err != nil {
			done <- got{err: err}
			return
		}
		_, statErr := os.Stat(c)
		rest, err := io.ReadAll(f)
		done <- got{tableFirst: statErr == nil, events: append(one[:], rest...), err: err}
	}()
	require.NoError(t, GenerateFiles(context.Background(), fifo, c, n, cfg))
	r := <-done
	require.NoError(t, r.err)
	assert.True(t, r.tableFirst, "the campaigns table is committed before the first tuple")
	want := make([]byte, n*TupleSize)
	newGen(t, cfg).Fill(want, 0)
	assert.True(t, bytes.Equal(want, r.events))
	assertOnlyFiles(t, dir, "c.csv", "events")
}
