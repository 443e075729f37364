package doubling

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAppendDoubles(t *testing.T) {
	var s []int
	grew := 0
	for i := range 1 << 16 {
		before := cap(s)
		s = Append(s, i, -i)
		if cap(s) != before {
			grew++
		}
		assert.Equal(t, []int{i, -i}, s[len(s)-2:])
	}
	assert.Len(t, s, 1<<17)
	assert.LessOrEqual(t, grew, 18, "grown by doubling: about log2(n) times")
}
