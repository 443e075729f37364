package profile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStart: both profiles written once stopped, over profiles that were
// there; a file that cannot be created is a *CreateError naming the
// profile.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	for range 2 { // the second time over the first's profiles
		stop, err := Start(cpu, mem)
		require.NoError(t, err)
		require.NoError(t, stop())
		for _, p := range []string{cpu, mem} {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, gzipMagic, b[:2], p)
		}
	}
	stop, err := Start("", "")
	require.NoError(t, err)
	require.NoError(t, stop())

	_, err = Start(filepath.Join(dir, "none", "cpu"), "")
	ce, ok := errors.AsType[*CreateError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "cpuprofile", ce.Profile)
	_, err = Start("", filepath.Join(dir, "none", "mem"))
	ce, ok = errors.AsType[*CreateError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "memprofile", ce.Profile)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left")
}

// TestStartRefusesWhatIsNotAProfile: a path that holds another file (the
// program, an input) is refused and left as it is, as is one file for
// both profiles; the file is written only when the profile is stopped,
// so an input named by mistake would be read whole first.
func TestStartRefusesWhatIsNotAProfile(t *testing.T) {
	dir := t.TempDir()
	program := filepath.Join(dir, "q.sql")
	require.NoError(t, os.WriteFile(program, []byte("SELECT 1;\n"), 0o644))
	for _, paths := range [][2]string{{program, ""}, {"", program}} {
		_, err := Start(paths[0], paths[1])
		ce, ok := errors.AsType[*CreateError](err)
		require.True(t, ok, "%v", err)
		assert.Contains(t, ce.Error(), "q.sql exists and is not a profile")
	}
	b, err := os.ReadFile(program)
	require.NoError(t, err)
	assert.Equal(t, "SELECT 1;\n", string(b))

	both := filepath.Join(dir, "both.pprof")
	_, err = Start(both, both)
	ce, ok := errors.AsType[*CreateError](err)
	require.True(t, ok, "%v", err)
	assert.Contains(t, ce.Error(), "is the CPU profile's file too")
	assert.NoFileExists(t, both)

	empty := filepath.Join(dir, "empty.pprof")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	stop, err := Start(empty, "")
	require.NoError(t, err, "an empty file may be a profile's")
	info, err := os.Stat(empty)
	require.NoError(t, err)
	assert.Zero(t, info.Size(), "not written before the profile stops")
	require.NoError(t, stop())
	info, err = os.Stat(empty)
	require.NoError(t, err)
	assert.Positive(t, info.Size())
}
