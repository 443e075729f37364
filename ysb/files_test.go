package ysb

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.ErrorContains(t, err, "not a regular file")
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.csv")
	require.NoError(t, WriteFileAtomic(dst, func(w io.Writer) error {
		_, err := io.WriteString(w, "hello\n")
		return err
	}))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
	fi, err := os.Stat(dst)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	// A failing writer leaves the old content and no temp file behind.
	err = WriteFileAtomic(dst, func(w io.Writer) error {
		_, _ = io.WriteString(w, "partial")
		return errors.New("boom")
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")
	assert.Contains(t, err.Error(), dst)
	got, err = os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
	assertOnlyFiles(t, dir, "out.csv")

	// A failing writer for a new file leaves no file at all.
	err = WriteFileAtomic(filepath.Join(dir, "new.csv"), func(io.Writer) error { return errors.New("boom") })
	require.Error(t, err)
	assertOnlyFiles(t, dir, "out.csv")

	// A directory that does not exist: clear error, nothing created.
	err = WriteFileAtomic(filepath.Join(dir, "nope", "x.csv"), func(io.Writer) error { return nil })
	assert.ErrorContains(t, err, filepath.Join(dir, "nope", "x.csv"))
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
	dir := t.TempDir()
	cfg := GenConfig{Campaigns: 3, AdsPerCampaign: 4, Seed: 11, StartMs: 100, TuplesPerMs: 7}
	events, camps := filepath.Join(dir, "events.bin"), filepath.Join(dir, "campaigns.csv")
	// More than one chunk, not a whole number of chunks.
	const n = genChunk/TupleSize*2 + 77
	require.NoError(t, GenerateFiles(events, camps, n, cfg))
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
	require.NoError(t, GenerateFiles(events, camps, 0, cfg))
	_, tuples, err = OpenEvents(events)
	require.NoError(t, err)
	assert.Zero(t, tuples)

	// Invalid config: nothing written.
	empty := t.TempDir()
	err = GenerateFiles(filepath.Join(empty, "e.bin"), filepath.Join(empty, "c.csv"), 10, GenConfig{})
	assert.ErrorContains(t, err, "Campaigns = 0")
	assertOnlyFiles(t, empty)

	// Campaigns path in a missing directory: the events temp file is removed too.
	err = GenerateFiles(filepath.Join(empty, "e.bin"), filepath.Join(empty, "no", "c.csv"), 10, cfg)
	require.Error(t, err)
	assertOnlyFiles(t, empty)
}
