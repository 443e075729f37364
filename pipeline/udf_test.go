package pipeline_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/query"
)

// The functions are registered as RegisterFunc asks, before anything
// compiles: the package's other tests compile queries in parallel, and a
// registration beside them races with their lookups.
func init() {
	for _, f := range []query.ScalarFunc{
		{Name: "pipeline_test_tax", Args: []query.ValueType{query.FloatValue},
			Result: query.FloatValue, Fn: func(a []query.Scalar) query.Scalar { return query.Scalar{F: a[0].F * 2} }},
		{Name: "pipeline_test_shout", Args: []query.ValueType{query.StringValue},
			Result: query.StringValue, Fn: func(a []query.Scalar) query.Scalar {
				if len(a[0].S) == 0 {
					return query.Scalar{Null: true}
				}
				return query.Scalar{S: append(bytes.ToUpper(a[0].S), '!')}
			}},
		{Name: "pipeline_test_even", Args: []query.ValueType{query.IntValue},
			Result: query.BoolValue, Fn: func(a []query.Scalar) query.Scalar { return query.Scalar{I: 1 - a[0].I&1} }},
	} {
		if err := query.RegisterFunc(f); err != nil {
			panic(err)
		}
	}
}

// TestGoScalarFunctions: functions written in Go, registered by name
// (query.RegisterFunc), called from SQL (bound by CREATE FUNCTION too),
// in WHERE, the select list and a group key; NULL in, NULL out; checked
// against the reference evaluator, which calls the same functions.
func TestGoScalarFunctions(t *testing.T) {
	t.Parallel()
	var csv strings.Builder
	csv.WriteString("ts,name,amount\n")
	names := []string{"ann", "", "a much longer name than inline"}
	for i := range 3000 {
		amount := strings.Repeat("1", 1+i%3)
		if i%7 == 0 {
			amount = "" // NULL
		}
		csv.WriteString(strings.Join([]string{strconv.Itoa(i), names[i%len(names)], amount}, ",") + "\n")
	}
	prog, err := pipeline.Compile("udf.sql", `
CREATE FUNCTION pipeline_test_tax AS 'com.example.Tax';
CREATE SOURCE s (ts BIGINT, name VARCHAR, amount DOUBLE) WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW taxed AS SELECT ts, PIPELINE_TEST_SHOUT(name) AS loud, pipeline_test_tax(amount) AS gross FROM s WHERE pipeline_test_even(ts);
CREATE VIEW per_name AS SELECT window_start, pipeline_test_shout(name) AS loud, COUNT(*) AS n, SUM(pipeline_test_tax(amount)) AS total
  FROM TUMBLE(s, ts, INTERVAL '1' SECOND) GROUP BY window_start, pipeline_test_shout(name);`)
	require.NoError(t, err)
	require.NoError(t, prog.AttachReader("s", strings.NewReader(csv.String())))
	var rows []string
	require.NoError(t, prog.OnRows("taxed", func(r *pipeline.Rows) error {
		for i := range r.Len() {
			rows = append(rows, string(r.AppendCSV(nil, i)))
		}
		return nil
	}))
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 2, TaskSize: 32 * 64, BufferSize: 1 << 16}, Validate: true})
	require.NoError(t, err)
	defer job.Close()
	sum, err := job.Run(context.Background())
	require.NoError(t, err)
	for _, q := range sum.Queries {
		assert.Empty(t, q.Mismatch, q.Name)
	}
	require.Len(t, rows, 1500)
	assert.Equal(t, []string{
		"0,ANN!,\n", // amount NULL: tax NULL, without a call
		"2,A MUCH LONGER NAME THAN INLINE!,222\n",
		"4,,22\n", // the empty name: shout answers NULL
		"6,ANN!,2\n",
	}, rows[:4])
}
