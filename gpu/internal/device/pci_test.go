package device

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPCIBusIDIsSysfsName(t *testing.T) {
	assert.Equal(t, "0000:3b:00.0", pciBusID(0, 0x3b, 0))
	assert.Equal(t, "0001:c1:1f.0", pciBusID(1, 0xc1, 0x1f))
}

func TestNUMANodeOf(t *testing.T) {
	dir := t.TempDir()
	write := func(id, content string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, id), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, id, "numa_node"), []byte(content), 0o644))
	}
	write("0000:3b:00.0", "1\n")
	write("0000:5e:00.0", "-1\n")
	write("0000:86:00.0", "garbage\n")
	assert.Equal(t, 1, numaNodeOf(dir, "0000:3b:00.0"))
	assert.Equal(t, 1, numaNodeOf(dir, "0000:3B:00.0"), "CUDA's upper-case spelling")
	assert.Equal(t, -1, numaNodeOf(dir, "0000:5e:00.0"), "no NUMA")
	assert.Equal(t, -1, numaNodeOf(dir, "0000:86:00.0"))
	assert.Equal(t, -1, numaNodeOf(dir, "0000:99:00.0"), "missing")
	assert.Equal(t, -1, numaNodeOf(dir, ""))
}
