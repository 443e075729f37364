package nexmark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlinkHome: the directory holds data/side_input.txt as the project's
// side_input_gen.sh writes it: SideInputRows lines "i,i" from 0.
func TestFlinkHome(t *testing.T) {
	dir, err := FlinkHome()
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	b, err := os.ReadFile(filepath.Join(dir, "data", "side_input.txt"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, SideInputRows)
	assert.Equal(t, "0,0", lines[0])
	assert.Equal(t, "4711,4711", lines[4711])
	assert.Equal(t, "9999,9999", lines[SideInputRows-1])
}
