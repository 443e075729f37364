package profile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStart: both profiles written once stopped; a file that cannot be
// created is a *CreateError naming the profile.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	stop, err := Start(cpu, mem, func(err error) { t.Error(err) })
	require.NoError(t, err)
	stop()
	for _, p := range []string{cpu, mem} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, fi.Size(), p)
	}
	stop, err = Start("", "", nil)
	require.NoError(t, err)
	stop()

	_, err = Start(filepath.Join(dir, "none", "cpu"), "", nil)
	var ce *CreateError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "cpuprofile", ce.Profile)
	_, err = Start("", filepath.Join(dir, "none", "mem"), nil)
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, err.Error(), "memprofile: open "+filepath.Join(dir, "none", "mem"))
}
