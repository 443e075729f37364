package window

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vmFlags returns the VmFlags of the mapping that holds address a, from
// /proc/self/smaps.
func vmFlags(t *testing.T, a uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if r, _, _ := strings.Cut(line, " "); !strings.HasSuffix(r, ":") {
			// A mapping's first line: its address range first.
			var lo, hi uintptr
			_, err := fmt.Sscanf(r, "%x-%x", &lo, &hi)
			require.NoError(t, err, line)
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", a)
	return nil
}

// TestSlabBlockAdvisedHuge: a slab's blocks of whole huge pages are
// advised MADV_HUGEPAGE (the mapping's "hg" flag), the point of the slab.
func TestSlabBlockAdvisedHuge(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	if thpDisabled {
		t.Skip("GODEBUG=disablethp=1")
	}
	s := slab[int64]{made: slabFrom}
	v := s.take(1, 1)
	require.NotEmpty(t, s.block)
	assert.Contains(t, vmFlags(t, uintptr(unsafe.Pointer(&v[0]))), "hg")
	big := s.take(1, slabBlock/4)
	assert.Contains(t, vmFlags(t, uintptr(unsafe.Pointer(&big[0]))+slabBlock/2), "hg")
}

func TestGodebugSet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		godebug string
		want    bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"disablethp=0", false},
		{"madvdontneed=1,disablethp=1", true},
		{"disablethp=1, gctrace=1", true},
		{"disablethp=1,disablethp=0", false},
		{"disablethp=0,disablethp=1", true},
		{"xdisablethp=1", false},
		{"disablethp", false},
	} {
		assert.Equal(t, c.want, godebugSet(c.godebug, "disablethp"), "GODEBUG=%q", c.godebug)
	}
}
