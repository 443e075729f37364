package cuda

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entries lists the kernels a PTX module declares (`.visible .entry name(`).
func entries(ptx string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`).FindAllStringSubmatch(ptx, -1) {
		names = append(names, m[1])
	}
	return names
}

func TestEmbeddedPTXDeclaresEntries(t *testing.T) {
	require.NotEmpty(t, PTX)
	assert.Regexp(t, `(?m)^\.version \d+\.\d+$`, PTX)
	assert.Regexp(t, `(?m)^\.target sm_\d+$`, PTX)
	assert.Regexp(t, `(?m)^\.address_size 64$`, PTX)
	want := append(append(append(append([]string{}, AggEntries...), SelEntries...), JoinEntries...), ScanEntries...)
	assert.ElementsMatch(t, want, entries(PTX))
}

// Every parameter of every kernel is 64-bit: gorgonia.org/cu's
// Function.Launch passes 8 bytes per parameter.
func TestEmbeddedPTXParamsAre64Bit(t *testing.T) {
	param := regexp.MustCompile(`\.param \.(\w+) (\w+)`)
	ms := param.FindAllStringSubmatch(PTX, -1)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		assert.Contains(t, []string{"u64", "b64", "s64", "f64"}, m[1], "kernel parameter %s", m[2])
	}
}
