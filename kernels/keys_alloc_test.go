package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// TestCanonicalKeyDoesNotAllocate: the canonical form of a key of a
// nullable integer and a string (what a result stage sorts string-keyed
// rows by, row by row) is written without an allocation: the keys' types
// are worked out when the plan is made, not per row.
func TestCanonicalKeyDoesNotAllocate(t *testing.T) {
	s, err := query.NewSchema(40, query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "id", Type: query.Int64, Offset: 8, Nullable: true, NullBit: 32 * 8},
		query.Attribute{Name: "name", Type: query.String, Offset: 16})
	require.NoError(t, err)
	q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(10), GroupBy: []query.Expr{query.C("id"), query.C("name")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	p, err := kernels.Compile(q)
	require.NoError(t, err)
	var kb [16]byte // every part 0: the id NULL (its flag 0), the string NULL (its number 0)
	for _, kp := range p.KeyParts {
		copy(kb[kp.Pos:], query.AppendIntKey(nil, 0, kp.Width))
	}
	var buf []byte
	buf = p.AppendCanonicalKey(buf, kb[:])
	require.NotEmpty(t, buf)
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = p.AppendCanonicalKey(buf[:0], kb[:]) }))
}
