package sql

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// The SQL of issue #25 (strings, timestamps, booleans, NULLs, CASE, IN,
// LIKE, casts, functions, FILTER, COUNT(DISTINCT), arithmetic over
// aggregates, window_end in views, subqueries, lookup joins, queries over
// window joins, sink tables), compiled and run through the engine, each
// query's output checked against the reference evaluator over that
// query's own input (a source's tuples, or its upstream's output).

// valuesBase declares a JSON source (every column but ts can be NULL) and
// two tables, on lines 1 to 4; the statements under test start on line 5.
const valuesBase = `CREATE SOURCE e (ts TIMESTAMP(3), k VARCHAR, n BIGINT, m INT, x DOUBLE, b BOOLEAN, s VARCHAR(40), c ENUM('red', 'green', 'blue'), u UUID,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'stdin', format = 'json');
CREATE TABLE users (name VARCHAR NOT NULL, country VARCHAR, age INT, since TIMESTAMP(3), vip BOOLEAN) WITH (connector = 'file', path = 'users.csv', format = 'csv');
CREATE TABLE ids (id BIGINT NOT NULL, label VARCHAR, score DOUBLE) WITH (connector = 'file', path = 'ids.json', format = 'json');
`

var valueStrings = []string{"", "a", "paris", "Paris", " lyon ", "apple", "google", "a,b,c", "x-y-z", "très long nom de ville",
	"café", "tokyo-shinjuku-ward", "channel_id=123&x=1", "0123456789abcdef0123456789", "%_%", "ab", "abc", "b"}

// valuesData is n tuples of source schema s: event times mostly
// increasing (some out of order, a few late), small numbers, strings of
// valueStrings (k of its first 8: a group key), NULLs one in nullRate
// (0: none) of the nullable columns; long strings point into a.
func valuesData(r *rand.Rand, s *query.Schema, a *strview.Arena, n, nullRate int) []byte {
	size := s.TupleSize
	b := make([]byte, n*size)
	ts := int64(1_700_000_000_000) + r.Int64N(1000)
	le := binary.LittleEndian
	for i := range n {
		t := b[i*size : (i+1)*size]
		ts += r.Int64N(60)
		et := ts
		if r.IntN(40) == 0 {
			et -= r.Int64N(2500)
		}
		for _, at := range s.Attrs {
			if at.Nullable && nullRate > 0 && r.IntN(nullRate) == 0 {
				at.SetNull(t, true)
				continue
			}
			v := t[at.Offset : at.Offset+at.Size]
			switch {
			case at.Offset == 0:
				le.PutUint64(v, uint64(et))
			case at.Logical == query.Time:
				le.PutUint64(v, uint64(ts-r.Int64N(86_400_000*40)))
			case at.Logical == query.Boolean:
				le.PutUint32(v, uint32(r.IntN(2)))
			case at.Type == query.String && at.Name == "k":
				strview.Put(v, []byte(valueStrings[r.IntN(8)]), a)
			case at.Type == query.String:
				strview.Put(v, []byte(valueStrings[r.IntN(len(valueStrings))]), a)
			case at.Type == query.Int64:
				le.PutUint64(v, uint64(r.Int64N(40)-10))
			case at.Type == query.Int32 && at.Name == "c":
				le.PutUint32(v, uint32(r.IntN(3)))
			case at.Type == query.Int32:
				le.PutUint32(v, uint32(r.Int32N(9)-2))
			case at.Type == query.Float64:
				le.PutUint64(v, math.Float64bits(float64(r.IntN(800))/8-20))
			case at.Type == query.Float32:
				le.PutUint32(v, math.Float32bits(float32(r.IntN(400))/4))
			case at.Type == query.Bytes:
				v[0] = byte(r.IntN(6))
			}
		}
	}
	return b
}

// rehome copies tuples of schema s, their long strings into a (the
// engine's memory is valid only during its call).
func rehome(s *query.Schema, tuples []byte, a *strview.Arena) []byte {
	out := append([]byte(nil), tuples...)
	for off := 0; off+s.TupleSize <= len(out); off += s.TupleSize {
		t := out[off : off+s.TupleSize]
		for _, at := range s.Attrs {
			if at.Type == query.String && !at.IsNull(t) {
				v := t[at.Offset : at.Offset+at.Size]
				strview.Put(v, append([]byte(nil), strview.Bytes(v)...), a)
			}
		}
	}
	return out
}

// progOutput is what one query of a program output in an engine run.
type progOutput struct {
	tuples []byte // rehomed
	rows   []reference.Row
	counts reference.Counts
	err    error
}

// runProgram runs p's specs in one engine (one worker, tasks of
// taskTuples tuples of the largest source), each source fed its data.
func runProgram(t *testing.T, p *Program, data map[string][]byte, a *strview.Arena, taskTuples int) []*progOutput {
	t.Helper()
	specs := p.Specs()
	outs := make([]*progOutput, len(specs))
	var mu sync.Mutex
	for i, q := range p.Queries {
		o := &progOutput{}
		outs[i] = o
		out := q.Output
		specs[i].Tuples = func(b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			o.tuples = append(o.tuples, rehome(out, b, a)...)
			return nil
		}
		if mq := specs[i].Query; mq != nil && !mq.Stateless() {
			specs[i].Windows = func(w *engine.Window) error {
				for r := range w.Rows() {
					row := reference.Row{Start: w.Start, End: w.End, Key: string(w.CanonicalKey(r))}
					for k, ag := range mq.Aggregates {
						var v reference.Value
						switch mq.AggType(ag) {
						case query.FloatValue:
							v = reference.Float(w.AggFloat(r, k))
						case query.TimeValue:
							v = reference.Time(w.Agg(r, k))
						default:
							v = reference.Int(w.Agg(r, k))
						}
						if w.AggNull(r, k) {
							v = reference.Null(v.Kind)
						}
						row.Values = append(row.Values, v)
					}
					o.rows = append(o.rows, row)
				}
				return nil
			}
		}
	}
	unit := 1
	for _, s := range p.Sources {
		unit = max(unit, s.Schema.TupleSize)
	}
	n := taskTuples
	for _, q := range p.Queries { // a chained query's tuples must fit a task
		n = max(n, (q.Output.TupleSize+unit-1)/unit)
	}
	size := unit * n
	// Two workers: partial results merged across workers, as a run merges
	// them, not one worker's in order.
	eng, err := engine.Start(engine.Config{Workers: 2, TaskSize: size, BufferSize: 1 << 22}, specs)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(specs))
	for i, q := range p.Queries {
		for k, in := range []string{q.Input, q.InputRight} {
			if in == "" {
				continue
			}
			s := eng.Stream(i)
			if k == 1 {
				s = s.Right()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.Write(data[in])
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	stats, err := eng.CloseAll()
	require.NoError(t, err)
	for i, st := range stats {
		outs[i].counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	}
	return outs
}

// checkProgram runs p through the engine and checks every query's output
// against the reference evaluator over the query's own input; it returns
// the outputs. Each query must output something.
func checkProgram(t *testing.T, p *Program, data map[string][]byte, a *strview.Arena, taskTuples int) []*progOutput {
	t.Helper()
	outs := runProgram(t, p, data, a, taskTuples)
	inputOf := func(source, from string) []byte {
		if from == "" {
			return data[source]
		}
		for i, q := range p.Queries {
			if q.Name == from {
				return outs[i].tuples
			}
		}
		t.Fatalf("no query %s", from)
		return nil
	}
	for i, q := range p.Queries {
		got := outs[i]
		if j := q.Spec.Join; j != nil {
			want, err := reference.EvaluateJoin(j, inputOf(q.Input, q.From), inputOf(q.InputRight, q.FromRight))
			require.NoError(t, err, q.Name)
			gv, err := reference.DecodeTuples(q.Output, got.tuples)
			require.NoError(t, err, q.Name)
			require.NotEmpty(t, want.Values, "%s has no output", q.Name)
			require.Equal(t, len(want.Values), len(gv), q.Name)
			for k := range gv {
				if slices.Equal(want.Values[k], gv[k]) { // printed alike; printing every pair cost more than the run
					continue
				}
				require.Equal(t, fmt.Sprint(want.Values[k]), fmt.Sprint(gv[k]), "%s: pair %d", q.Name, k)
			}
			continue
		}
		mq := q.Spec.Query
		want, err := reference.Evaluate(mq, inputOf(q.Input, q.From))
		require.NoError(t, err, q.Name)
		res := &reference.Result{Rows: got.rows, Counts: got.counts}
		if mq.Stateless() {
			require.NotEmpty(t, want.Values, "%s has no output", q.Name)
			res.Values, err = reference.DecodeTuples(q.Output, got.tuples)
			require.NoError(t, err, q.Name)
			res.Tuples = got.tuples
		} else {
			require.NotEmpty(t, want.Rows, "%s has no output", q.Name)
		}
		if d := reference.Diff(mq, want, res, 1e-9); d != "" {
			t.Fatalf("%s: %s\n%s", q.Name, d, p.Explain())
		}
	}
	return outs
}

// valuesTables are the tables' rows, as CSV and JSON lines.
const usersCSV = "paris,FR,31,2024-01-02 03:04:05,true\napple,US,,2023-05-01 00:00:00.250,false\ngoogle,,44,,\n" +
	"a,DE,7,1970-01-01 00:00:00,true\n\"a,b,c\",\"F,R\",3,2024-02-29 12:00:00,false\ntrès long nom de ville,JP,99,2001-01-01 00:00:00,\n"
const idsJSON = `{"id": 1, "label": "one", "score": 1.5}
{"id": -3, "label": "minus three"}
{"id": 7, "score": 0.25}
{"id": 12, "label": "twelve, a long label indeed", "score": -2}
`

// compileValues compiles valuesBase and text, loads the tables, and
// returns the program and a source's data, 3000 tuples.
func compileValues(t *testing.T, text string, seed uint64, nullRate int, a *strview.Arena) (*Program, map[string][]byte) {
	t.Helper()
	return compileValuesN(t, text, seed, nullRate, 3000, a)
}

// compileValuesN is compileValues with n tuples.
func compileValuesN(t *testing.T, text string, seed uint64, nullRate, n int, a *strview.Arena) (*Program, map[string][]byte) {
	t.Helper()
	p := mustCompile(t, valuesBase+text)
	require.NoError(t, p.Table("users").Load(strings.NewReader(usersCSV)))
	require.NoError(t, p.Table("ids").Load(strings.NewReader(idsJSON)))
	r := rand.New(rand.NewPCG(seed, 25))
	return p, map[string][]byte{"e": valuesData(r, p.Source("e").Schema, a, n, nullRate)}
}

// TestSQLValuesMatchReference: each construct of issue #25, compiled and
// run through the engine, gives the reference evaluator's output.
func TestSQLValuesMatchReference(t *testing.T) {
	for c, tc := range []struct{ name, sql string }{
		{"projection of every type", `SELECT ts, k, n, m, x, b, s, c, u FROM e`},
		{"select star and more", `SELECT *, n * 2 AS n2, k || '!' AS k2 FROM e WHERE n > 0`},
		{"case", `SELECT CASE WHEN n > 20 THEN 'high' WHEN n > 5 THEN 'mid' ELSE 'low' END AS level,
			CASE c WHEN 'red' THEN 1 WHEN 'blue' THEN 3 END AS code, CASE WHEN b THEN x END AS xb FROM e`},
		{"in and not in", `SELECT k, n FROM e WHERE k IN ('paris', 'apple', 'a') OR n NOT IN (1, 2, 3, NULL) OR c IN ('green')`},
		{"between", `SELECT n, x FROM e WHERE n BETWEEN 0 AND 10 AND x NOT BETWEEN -5 AND 5.5`},
		{"like", `SELECT s FROM e WHERE s LIKE '%a%' OR s NOT LIKE 'p_r%' OR s LIKE '!%!_%' ESCAPE '!'`},
		{"is null", `SELECT n IS NULL AS nn, k IS NOT NULL AS kk, b IS TRUE AS bt, b IS NOT FALSE AS bnf FROM e`},
		{"a UUID's NULLs", `SELECT u, u IS NULL AS un FROM e WHERE u IS NOT NULL OR n > 3`},
		{"a UUID's NULLs in an aggregation", `SELECT window_start, COUNT(*) AS cnt, COUNT(u) AS cu, COUNT(*) FILTER (WHERE u IS NULL) AS nu
			FROM TUMBLE(e, ts, INTERVAL '10' SECOND) WHERE u IS NULL OR n > 3 GROUP BY window_start`},
		{"casts", `SELECT CAST(n AS DOUBLE) AS d, CAST(x AS BIGINT) AS i, CAST(n AS VARCHAR) AS ns, CAST(ts AS VARCHAR) AS tss,
			CAST(b AS INT) AS bi, CAST(k AS BIGINT) AS kn, CAST(c AS VARCHAR) AS cs, CAST(m AS BOOLEAN) AS mb FROM e`},
		{"concat", `SELECT k || '-' || s AS ks, CONCAT(k, n, b, c) AS all4 FROM e`},
		{"extract and time functions", `SELECT EXTRACT(YEAR FROM ts) AS y, EXTRACT(MONTH FROM ts) AS mo, HOUR(ts) AS h, MINUTE(ts) AS mi,
			SECOND(ts) AS se, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm') AS f FROM e`},
		{"numeric functions", `SELECT MOD(n, 7) AS md, n % 4 AS pc, ABS(n) AS a, FLOOR(x) AS fl, CEIL(x) AS ce, CEILING(x) AS cg,
			ROUND(x, 1) AS r1, ROUND(x) AS r0 FROM e`},
		{"string functions", `SELECT LOWER(s) AS lo, UPPER(k) AS up, CHAR_LENGTH(s) AS cl, CHARACTER_LENGTH(k) AS cl2,
			SUBSTRING(s, 2, 3) AS s1, SUBSTRING(s FROM 3) AS s2, SUBSTRING(s FROM 1 FOR 2) AS s3,
			SUBSTRING(s, -3) AS s4, SUBSTR(s, 0, 2) AS s5, SUBSTR(s, -4, m) AS s6, SUBSTRING(k, m - 2, m - 3) AS s7,
			TRIM(s) AS t1, TRIM(LEADING FROM s) AS t2, TRIM(TRAILING FROM s) AS t3, TRIM(BOTH ' ' FROM s) AS t4,
			SPLIT_INDEX(s, ',', 1) AS si, REGEXP_EXTRACT(s, '(&|^)channel_id=([^&]*)', 2) AS re, COUNT_CHAR(s, 'a') AS cc FROM e`},
		{"coalesce and friends", `SELECT COALESCE(k, s, 'none') AS k1, COALESCE(n, m) AS nm, IF(n > 3, k, s) AS ifv,
			NULLIF(n, 3) AS nn, IFNULL(x, 0) AS xx FROM e`},
		{"literals", `SELECT TRUE AS t, FALSE AS f, CAST(NULL AS VARCHAR) AS nul, TIMESTAMP '2024-01-01 00:00:00' AS t0,
			ts + INTERVAL '1' SECOND AS t1, ts - INTERVAL '2' MINUTE AS t2 FROM e
			WHERE ts > TIMESTAMP '2023-01-01 00:00:00' AND ts <= DATE '2099-01-01'`},
		{"aggregates over NULLs and strings", `SELECT window_start, window_end, k, COUNT(*) AS cnt, COUNT(n) AS cn, SUM(n) AS sn,
			AVG(x) AS ax, MIN(m) AS mm, MAX(ts) AS mt FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY k`},
		{"filter", `SELECT window_start, COUNT(*) FILTER (WHERE n > 10) AS big, SUM(x) FILTER (WHERE k LIKE 'a%') AS sa,
			COUNT(*) AS all_ FROM TUMBLE(e, ts, INTERVAL '5' SECOND) GROUP BY window_start`},
		{"group by expressions", `SELECT UPPER(k) AS uk, b, COUNT(*) AS cnt FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '10' SECOND))
			GROUP BY window_start, window_end, UPPER(k), b`},
		{"group by case", `SELECT CASE WHEN n > 10 THEN 'big' ELSE 'small' END AS size, COUNT(*) AS cnt
			FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY CASE WHEN n > 10 THEN 'big' ELSE 'small' END`},
		{"arithmetic over aggregates", `SELECT window_start, window_end, k, SUM(n) * 1.0 / COUNT(*) AS mean, COUNT(*) + 1 AS n1,
			CAST(SUM(x) AS BIGINT) AS sx, CASE WHEN COUNT(*) > 5 THEN 'many' ELSE 'few' END AS howmany
			FROM HOP(e, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY k HAVING COUNT(*) > 1`},
		{"flink group window", `SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND) AS st, TUMBLE_END(ts, INTERVAL '10' SECOND) AS en,
			TUMBLE_ROWTIME(ts, INTERVAL '10' SECOND) AS rt, MAX(n) AS mx FROM e GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k`},
		{"flink hop group window", `SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS st,
			HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS en, COUNT(*) AS cnt
			FROM e GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)`},
		{"hop table function", `SELECT window_start, window_end, window_time, c, SUM(m) AS sm
			FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY window_start, window_end, c`},
		{"count distinct tumble", `SELECT window_start, window_end, k, COUNT(DISTINCT m) AS dm, COUNT(*) AS cnt, SUM(n) AS sn,
			MIN(x) AS mnx, MAX(x) AS mxx, AVG(n) AS an, COUNT(x) FILTER (WHERE b) AS cb
			FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY k`},
		{"count distinct hop", `SELECT window_start, COUNT(DISTINCT k) AS dk FROM HOP(e, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)
			GROUP BY window_start HAVING COUNT(*) > 2`},
		{"session group window", `SELECT k, SESSION_START(ts, INTERVAL '300' MILLISECOND) AS st, SESSION_END(ts, INTERVAL '300' MILLISECOND) AS en,
			SESSION_ROWTIME(ts, INTERVAL '300' MILLISECOND) AS rt, COUNT(*) AS cnt, SUM(n) AS sn
			FROM e GROUP BY SESSION(ts, INTERVAL '300' MILLISECOND), k`},
		{"session table function", `SELECT window_start, window_end, k, MAX(x) AS mx FROM TABLE(SESSION(TABLE e PARTITION BY k, DESCRIPTOR(ts), INTERVAL '200' MILLISECOND))
			GROUP BY window_start, window_end, k`},
		{"session partitioned by a qualified column", `SELECT window_start, window_end, k, COUNT(*) AS cnt FROM TABLE(SESSION(TABLE e PARTITION BY e.k, DESCRIPTOR(ts), INTERVAL '200' MILLISECOND)) AS w
			GROUP BY window_start, window_end, k`},
		{"sessions of a lookup join partitioned by the stream's column", `SELECT window_start, window_end, e.k, COUNT(*) AS cnt, MAX(u.age) AS oldest
			FROM SESSION(e PARTITION BY e.k, ts, INTERVAL '300' MILLISECOND) JOIN users AS u ON e.k = u.name GROUP BY window_start, window_end, e.k`},
		{"sessions in a view", `CREATE VIEW sess AS SELECT window_start, window_end, k, COUNT(*) AS cnt FROM SESSION(e PARTITION BY k, ts, INTERVAL '250' MILLISECOND) GROUP BY k;
			SELECT k, window_end - window_start AS span, cnt FROM sess WHERE cnt > 1`},
		{"sessions over a lookup join", `SELECT SESSION_START(e.ts, INTERVAL '400' MILLISECOND) AS st, SESSION_END(e.ts, INTERVAL '400' MILLISECOND) AS en, u.country, COUNT(*) AS cnt
			FROM e JOIN users AS u ON e.k = u.name GROUP BY SESSION(e.ts, INTERVAL '400' MILLISECOND), u.country`},
		{"global sessions over a lookup join", `SELECT window_start, window_end, COUNT(*) AS cnt
			FROM SESSION(e, ts, INTERVAL '400' MILLISECOND) JOIN users AS u ON e.k = u.name GROUP BY window_start, window_end`},
		{"views and window_end", `CREATE VIEW per_k AS SELECT window_start, window_end, k, COUNT(*) AS cnt
				FROM TUMBLE(e, ts, INTERVAL '5' SECOND) GROUP BY k;
			SELECT window_end, k, cnt * 2 AS c2 FROM per_k WHERE cnt > 1;
			SELECT window_start, SUM(cnt) AS total, MAX(window_end) AS last_end FROM TUMBLE(per_k, window_start, INTERVAL '20' SECOND)`},
		{"subquery in from", `SELECT x.k, x.cnt, x.window_end FROM (SELECT window_start, window_end, k, COUNT(*) AS cnt
			FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY k) AS x WHERE x.cnt > 2`},
		{"aggregation over a subquery", `SELECT window_start, lk, COUNT(*) AS cnt FROM (SELECT ts, LOWER(k) AS lk FROM e WHERE n > 0) AS y
			GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), lk`},
		{"window join select list", `SELECT l.k, r.n, l.x + r.x AS xx FROM e [RANGE INTERVAL '1' SECOND] AS l
			JOIN e [RANGE INTERVAL '1' SECOND] AS r ON l.k = r.k WHERE l.n < r.n`},
		{"window join aggregation", `SELECT window_start, l.k, COUNT(*) AS pairs, MAX(r.n) AS mx FROM TUMBLE(e, ts, INTERVAL '1' SECOND) AS l
			JOIN TUMBLE(e, ts, INTERVAL '1' SECOND) AS r ON l.k = r.k GROUP BY l.k`},
		{"insert into a sink table", `CREATE TABLE out1 (w TIMESTAMP(3), key VARCHAR, total DOUBLE, cnt VARCHAR) WITH ('connector' = 'blackhole');
			INSERT INTO out1 SELECT window_start, k, SUM(n), COUNT(*) FROM TUMBLE(e, ts, INTERVAL '10' SECOND) GROUP BY k`},
		{"lookup join, string key", `SELECT e.*, u.country, u.age, u.since, u.vip FROM e JOIN users AS u ON e.k = u.name`},
		{"lookup join, integer key", `SELECT n, i.label, i.score FROM e JOIN ids AS i ON e.n = i.id WHERE i.score IS NULL OR i.score > 0`},
		{"lookup join aggregation", `SELECT window_start, u.country, COUNT(*) AS cnt, AVG(u.age) AS age
			FROM TUMBLE(e, ts, INTERVAL '10' SECOND) JOIN users AS u ON e.k = u.name GROUP BY u.country`},
	} {
		// Each case with NULLs and without them in the long run; by default
		// one of the two, alternating, and with NULLs where the case is
		// about them, over 1,500 tuples rather than 3,000: 45 s of event
		// time, still several of every window (the largest, 20 s over
		// views), sessions, late and out-of-order tuples, and output from
		// every query (checkProgram requires it).
		only := c % 2
		if strings.Contains(strings.ToLower(tc.name), "null") {
			only = 1
		}
		t.Run(tc.name, func(t *testing.T) {
			var a strview.Arena
			defer a.Free()
			for i, nulls := range []int{0, 4} {
				if i != only && !testenv.Full() {
					continue
				}
				p, data := compileValuesN(t, tc.sql, uint64(i+1), nulls, testenv.Scale(1500, 3000), &a)
				checkProgram(t, p, data, &a, 1+i*37)
			}
		})
	}
}
