package query

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schema(t *testing.T) *Schema {
	s, err := NewSchema(64,
		Attribute{Name: "ts", Type: Int64},
		Attribute{Name: "a", Type: Int32, Offset: 8},
		Attribute{Name: "b", Type: Int64, Offset: 16},
		Attribute{Name: "f", Type: Float64, Offset: 24},
		Attribute{Name: "id", Type: Bytes, Offset: 32, Size: 16},
		Attribute{Name: "wide", Type: Bytes, Offset: 48, Size: 16},
	)
	require.NoError(t, err)
	return s
}

func TestNewSchemaErrors(t *testing.T) {
	for _, tc := range []struct {
		attrs []Attribute
		size  int
		want  string
	}{
		{nil, 16, "no attributes"},
		{[]Attribute{{Name: "x", Type: Int32}}, 16, "must be the int64 event time"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "ts", Type: Int32, Offset: 8}}, 16, "defined twice"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "a", Type: Int32, Offset: 6}}, 16, "overlap"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "a", Type: Int64, Offset: 12}}, 16, "does not fit"},
		{[]Attribute{{Name: "ts", Type: Int64}, {Name: "a", Type: Bytes, Offset: 8}}, 16, "positive size"},
		{[]Attribute{{Name: "ts", Type: Int64}}, 0, "tuple size 0"},
	} {
		_, err := NewSchema(tc.size, tc.attrs...)
		assert.ErrorContains(t, err, tc.want)
	}
}

func TestValidate(t *testing.T) {
	s := schema(t)
	base := func() *Query {
		return &Query{Name: "q", Schema: s, Window: Tumbling(10), Aggregates: []Aggregate{{Func: Count}}}
	}
	require.NoError(t, base().Validate())
	for _, tc := range []struct {
		edit func(q *Query)
		want string
	}{
		{func(q *Query) { q.Window = Sliding(5, 10) }, "slide 10 larger than size 5"},
		{func(q *Query) { q.Window = Tumbling(0) }, "size 0 must be positive"},
		{func(q *Query) { q.Window.Type = 7 }, "unknown type"},
		{func(q *Query) { q.Where = []Predicate{{Column: "nope", Op: Eq}} }, `no column "nope"`},
		{func(q *Query) { q.Where = []Predicate{{Column: "f", Op: Eq}} }, "float64"},
		{func(q *Query) { q.GroupBy = []string{"missing"} }, `group by: no column "missing"`},
		{func(q *Query) { q.GroupBy = []string{"f"} }, "group keys are integer or bytes"},
		{func(q *Query) { q.GroupBy = []string{"id", "a"} }, "at most 16 bytes"},
		{func(q *Query) { q.Aggregates = nil }, "no aggregate"},
		{func(q *Query) { q.Aggregates = []Aggregate{{Func: Sum, Column: "id"}} }, "only int32 and int64"},
		{func(q *Query) {
			q.Join = &StaticJoin{Column: "a", Table: &StaticTable{KeyWidth: 16, ValueWidth: 1}, As: "x"}
		}, "table's keys are 16 bytes"},
		{func(q *Query) {
			q.Join = &StaticJoin{Column: "id", As: "x", Table: &StaticTable{KeyWidth: 16, ValueWidth: 1,
				Keys: [][]byte{make([]byte, 16), make([]byte, 16)}, Values: [][]byte{{1}, {2}}}}
		}, "same key"},
	} {
		q := base()
		tc.edit(q)
		err := q.Validate()
		assert.ErrorContains(t, err, tc.want)
		assert.ErrorContains(t, err, `query "q"`)
	}
	q := base()
	q.GroupBy = []string{"a", "b"}
	q.Window = Window{Type: Rows, Size: 100, Slide: 10}
	assert.NoError(t, q.Validate())
}
