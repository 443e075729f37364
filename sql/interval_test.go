package sql

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// nexmarkBids is n bids of cfg's sequence (g.NextOf) as tuples of stride
// bytes (the generator's, and zeros after them), their strings in a.
func nexmarkBids(t *testing.T, cfg nexmark.Config, n, stride int, a *strview.Arena) []byte {
	t.Helper()
	g, err := nexmark.New(cfg)
	require.NoError(t, err)
	out := make([]byte, n*stride)
	var ev nexmark.Event
	for i := range n {
		require.True(t, g.NextOf(nexmark.BidTable, &ev))
		nexmark.EncodeTuple(out[i*stride:], &ev, a)
	}
	return out
}

// columnValue is the value of output column name of q in decoded tuple v.
func columnValue(t *testing.T, q *Query, v []reference.Value, name string) reference.Value {
	t.Helper()
	for _, oc := range q.Columns {
		if oc.Name == name {
			return v[oc.Attr]
		}
	}
	t.Fatalf("%s has no column %s", q.Name, name)
	return reference.Value{}
}

func valueText(v reference.Value) string {
	switch {
	case v.Null:
		return "NULL"
	case v.Kind == reference.StringKind:
		return "'" + v.Str + "'"
	case v.Kind == reference.FloatKind:
		return fmt.Sprint(v.F)
	}
	return fmt.Sprint(v.I)
}

// TestNexmarkQ7Lowering: q7 as the Nexmark project writes it is a window
// join, in tumbling windows of 10 s, of the bids (each timed, and a bid on
// a multiple of 10 s a second time 1 ms earlier) with the windows'
// maximum prices; INSERT INTO maps the select list to the table's
// columns by position.
func TestNexmarkQ7Lowering(t *testing.T) {
	text, err := os.ReadFile("../examples/nexmark/q7.sql")
	require.NoError(t, err)
	p := mustCompile(t, string(text))
	var names []string
	for _, q := range p.Queries {
		names = append(names, q.Name)
	}
	require.Equal(t, []string{"nexmark_q7$1", "nexmark_q7$2", "nexmark_q7$3", "nexmark_q7$4", "nexmark_q7"}, names)
	agg, end, retime, join, final := p.Queries[0], p.Queries[1], p.Queries[2], p.Queries[3], p.Queries[4]
	assert.Equal(t, query.Tumbling(10000), query.Window{Type: agg.Spec.Query.Window.Type, Size: agg.Spec.Query.Window.Size, Slide: agg.Spec.Query.Window.Slide})
	assert.Equal(t, "nexmark_q7$1", end.From)
	require.NotNil(t, retime.Spec.Query.UDF)
	assert.Equal(t, "bid", retime.Input)
	assert.Equal(t, "time := dateTime, and dateTime - 1 where a multiple of 10000, then auction, bidder, price, dateTime, extra", retime.Spec.Query.UDF.Name)
	assert.Equal(t, []string{"$time", "auction", "bidder", "price", "dateTime", "extra"}, attrNames(retime.Output), "the bids' columns the join reads")
	j := join.Spec.Join
	require.NotNil(t, j)
	assert.Equal(t, "nexmark_q7$3", join.From, "the bids, on the left as q7 writes them")
	assert.Equal(t, "nexmark_q7$2", join.FromRight)
	// W plus the bids' window delay (4 s less 1 ms: windowDelay)
	assert.Equal(t, query.Window{Type: query.Range, Size: 10000, Slide: 10000, Delay: 13999}, j.Window)
	assert.Equal(t, "(l.price = r.maxprice AND l.dateTime >= (r.dateTime - 10000) AND l.dateTime <= r.dateTime)", j.Where.String())
	assert.Equal(t, []string{"auction", "bidder", "price", "dateTime", "extra"}, columnNamesOf(final))
	var proj []string
	for _, pr := range final.Spec.Query.Project {
		proj = append(proj, pr.As+" := "+pr.Expr.String())
	}
	assert.Equal(t, []string{"auction := auction", "bidder := price", "price := bidder", "dateTime := B.dateTime", "extra := extra"}, proj)
	assert.Contains(t, p.Explain(), "  window: tumbling range 10000 (event-time units), delay 13999\n")
	assert.Contains(t, p.Explain(), "  udf: time := dateTime, and dateTime - 1 where a multiple of 10000, then auction, bidder, price, dateTime, extra\n")
}

// TestNexmarkQ7Meaning: q7 over generated bids, some crafted to lie on
// windows' bounds (a bid at a multiple of 10 s whose price is the highest
// of both windows it bounds, of the window it ends only, a bid 1 ms before
// a window), outputs each bid once per window whose highest price it
// bids and whose [end - 10 s, end] holds its time, as Go computes it;
// every query of the lowering gives the reference evaluator's output.
func TestNexmarkQ7Meaning(t *testing.T) {
	text, err := os.ReadFile("../examples/nexmark/q7.sql")
	require.NoError(t, err)
	p := mustCompile(t, string(text))
	final := p.Queries[len(p.Queries)-1]
	cfg := nexmark.DefaultConfig()
	cfg.EventRate = 100 // 10 ms apart: a window of 10 s holds ~920 bids
	var a strview.Arena
	defer a.Free()
	const size, w = 80, int64(10000)
	data := nexmarkBids(t, cfg, 30000, size, &a)
	le := binary.LittleEndian
	n := len(data) / size
	at := func(i int) int64 { return int64(le.Uint64(data[i*size:])) }
	setTime := func(i int, v int64) { le.PutUint64(data[i*size:], uint64(v)) }
	setPrice := func(i int, v int64) { le.PutUint64(data[i*size+24:], uint64(v)) }
	crafted := 0
	for k := at(0)/w + 2; k < at(n-1)/w; k++ {
		i := sort.Search(n, func(i int) bool { return at(i) >= k*w })
		// The first bid of window k, moved onto its start (no event
		// number that is a multiple of 50, a person's, is a bid: no bid
		// lies on a bound as generated); the times stay in order.
		setTime(i, k*w)
		top := int64(1)<<40 + k
		switch k % 4 {
		case 0:
			// the highest price of window k-1 (twice, once 1 ms before
			// window k) and of window k, at the bound between them
			setPrice(i, top)
			setPrice(i-5, top)
			setTime(i-1, k*w-1)
			setPrice(i-1, top)
			crafted++
		case 2:
			// window k-1's highest price, at its end (in window k, whose
			// highest is higher)
			setPrice(i, top)
			setPrice(i-7, top)
			setPrice(i+7, top+1)
			crafted++
		}
	}
	require.GreaterOrEqual(t, crafted, 10)

	// Go: the highest price of each window; every bid of [start, start +
	// 10 s] at that price.
	highest := map[int64]int64{}
	for i := range n {
		k, price := at(i)/w, int64(le.Uint64(data[i*size+24:]))
		if h, ok := highest[k]; !ok || price > h {
			highest[k] = price
		}
	}
	var want []string
	onBound := 0
	for k, h := range highest {
		for i := range n {
			var ev nexmark.Event
			nexmark.DecodeTuple(&ev, nexmark.BidTable, data[i*size:(i+1)*size])
			if ev.DateTime >= k*w && ev.DateTime <= k*w+w && ev.Bid.Price == h {
				// INSERT INTO maps by position: bidder holds the price
				want = append(want, fmt.Sprintf("%d %d %d %d '%s'", ev.Bid.Auction, ev.Bid.Price, ev.Bid.Bidder, ev.DateTime, ev.Bid.Extra))
				if ev.DateTime%w == 0 {
					onBound++
				}
			}
		}
	}
	require.GreaterOrEqual(t, onBound, 3*crafted/2, "pairs on windows' bounds")
	for _, tuples := range []int{20, 1000} {
		outs := checkProgram(t, p, map[string][]byte{"bid": data}, &a, tuples)
		got, err := reference.DecodeTuples(final.Output, outs[len(outs)-1].tuples)
		require.NoError(t, err)
		var have []string
		for _, v := range got {
			var f []string
			for _, c := range []string{"auction", "bidder", "price", "dateTime", "extra"} {
				f = append(f, valueText(columnValue(t, final, v, c)))
			}
			have = append(have, strings.Join(f, " "))
		}
		slices.Sort(want)
		slices.Sort(have)
		require.Equal(t, want, have, "tasks of %d tuples", tuples)
	}
}

// intervalCase is an interval join over valuesBase's e and the Go form of
// its predicate over an e tuple and a row of the view.
type intervalCase struct {
	text string
	// view names the view read (a subquery's part: "", the part the
	// retiming part reads); pred is ON AND WHERE over e's tuple (by
	// attribute name) and the view's row (by column name).
	pred func(s, v func(string) reference.Value) bool
	// cols are the select list's columns, and how Go computes each
	// from e's tuple and the view's row.
	cols []string
	val  func(s, v func(string) reference.Value, col string) reference.Value
}

func eq(a, b reference.Value) bool { return !a.Null && !b.Null && a.I == b.I && a.Str == b.Str }

// TestIntervalJoinMeaning: interval joins of a stream with NULLs, strings,
// tuples out of order and late (a watermark delay) with views of TUMBLE
// windows grouped by a key (the view on either side; bounds by the
// window's end or start, strict or not, narrower than the window; a view
// of the view) output each pair for which ON and WHERE hold once, but
// the pairs of the stream's tuples that the join finds late, which the
// view's own aggregation finds late too; every query gives the reference
// evaluator's output.
func TestIntervalJoinMeaning(t *testing.T) {
	byEnd := func(s, v func(string) reference.Value) bool {
		return eq(s("k"), v("k")) && eq(s("n"), v("top")) && s("ts").I >= v("we").I-1000 && s("ts").I <= v("we").I
	}
	for _, c := range []struct {
		text string
		w    int64
		pred func(s, v func(string) reference.Value) bool
	}{
		{`SELECT e.ts, e.k, e.n, v.top, v.we FROM e JOIN (
			SELECT k, MAX(n) AS top, window_end AS we FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k, window_start, window_end) v
			ON e.k = v.k AND e.n = v.top WHERE e.ts BETWEEN v.we - INTERVAL '1' SECOND AND v.we`, 1000, byEnd},
		{`SELECT e.ts, e.k, e.n, v.top, v.ws FROM (
			SELECT k, MAX(n) AS top, window_start AS ws FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY k, window_start) AS v
			JOIN e ON v.k = e.k AND v.top = e.n WHERE e.ts > v.ws AND v.ws + INTERVAL '1500' MILLISECOND > e.ts`, 2000,
			func(s, v func(string) reference.Value) bool {
				return eq(s("k"), v("k")) && eq(s("n"), v("top")) && s("ts").I > v("ws").I && s("ts").I < v("ws").I+1500
			}},
		{`CREATE VIEW v0 AS SELECT k, MAX(n) AS top, window_end AS we FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k, window_start, window_end;
			CREATE VIEW v1 AS SELECT we, top, k FROM v0 WHERE top > 0;
			SELECT e.ts, e.k, e.n, v.top, v.we FROM e JOIN v1 AS v ON e.k = v.k AND e.n = v.top AND e.ts <= v.we AND v.we - 1000 <= e.ts`, 1000,
			func(s, v func(string) reference.Value) bool { return byEnd(s, v) && v("top").I > 0 }},
	} {
		for _, seed := range []uint64{1, 2}[:testenv.Scale(1, 2)] { // both with SABER_HX_LONG_TESTS=1
			var a strview.Arena
			p, data := compileValues(t, c.text, seed, 7, &a)
			final := p.Queries[len(p.Queries)-1]
			var join, retime *Query
			for _, q := range p.Queries {
				if q.Spec.Join != nil {
					join = q
				}
				if q.Spec.Query != nil && q.Spec.Query.UDF != nil {
					retime = q
				}
			}
			require.NotNil(t, join, c.text)
			require.NotNil(t, retime, c.text)
			win := join.Spec.Join.Window
			require.Equal(t, query.Window{Type: query.Range, Size: c.w, Slide: c.w, Delay: c.w + 999}, win)
			require.Equal(t, "e", retime.Input, "the part that times e's tuples")
			outs := checkProgram(t, p, data, &a, 16)
			// the view's rows, as the engine output them (checked against
			// the reference above), and e's tuples
			vq := p.Query(join.From)
			if vq == retime {
				vq = p.Query(join.FromRight)
			}
			vrows, err := reference.DecodeTuples(vq.Output, outs[slices.Index(p.Queries, vq)].tuples)
			require.NoError(t, err)
			require.NotEmpty(t, vrows)
			src := p.Source("e").Schema
			stuples, err := reference.DecodeTuples(src, data["e"])
			require.NoError(t, err)
			// the join's late tuples of e, by its windows' rule: each
			// tuple in its tumbling window, and a tuple on a bound a
			// second time, at ts - 1, in the window before; the view's
			// aggregation finds each late too
			lateJoin := make([]bool, len(stuples)) // the tuple
			lateCopy := make([]bool, len(stuples)) // its copy, on a bound
			var wm int64
			nLate := 0
			for i, sv := range stuples {
				ts := sv[0].I
				end := ts/c.w*c.w + c.w // ts >= 0
				lateJoin[i] = i > 0 && wm-win.Delay >= end
				lateCopy[i] = i > 0 && ts%c.w == 0 && wm-win.Delay >= ts
				if lateJoin[i] || lateCopy[i] {
					nLate++
					require.GreaterOrEqual(t, wm-1000, end, "tuple %d (time %d, watermark %d) is late for the join, not for the view", i, ts, wm)
				}
				if i == 0 || ts > wm {
					wm = ts
				}
			}
			// the columns by name, looked up once: the loops below see
			// every pair
			sAt, vAt := map[string]int{}, map[string]int{}
			for i, a := range src.Attrs {
				sAt[a.Name] = i
			}
			for _, oc := range vq.Columns {
				vAt[oc.Name] = oc.Attr
			}
			// e's tuples by their key: every case joins on e.k = v.k,
			// its pred false where they differ or either is NULL (eq), so
			// a view row pairs only with the tuples of its key; looking
			// at every pair was most of the test's CPU.
			type key struct {
				i int64
				s string
			}
			byKey := map[key][]int{}
			for i, sv := range stuples {
				if k := sv[sAt["k"]]; !k.Null {
					byKey[key{k.I, k.Str}] = append(byKey[key{k.I, k.Str}], i)
				}
			}
			var want []string
			for _, vv := range vrows {
				vcol := func(name string) reference.Value { return vv[vAt[name]] }
				vk := vcol("k")
				if vk.Null {
					continue
				}
				for _, i := range byKey[key{vk.I, vk.Str}] {
					sv := stuples[i]
					scol := func(name string) reference.Value { return sv[sAt[name]] }
					late := lateJoin[i]
					if scol("ts").I == vv[0].I+c.w { // the view's window's end: the copy
						late = lateCopy[i]
					}
					if late || !c.pred(scol, vcol) {
						continue
					}
					var f []string
					for _, col := range []string{"ts", "k", "n"} {
						f = append(f, valueText(scol(col)))
					}
					for _, col := range final.Columns[3:] {
						f = append(f, valueText(vcol(col.Name)))
					}
					want = append(want, strings.Join(f, " "))
				}
			}
			got, err := reference.DecodeTuples(final.Output, outs[len(outs)-1].tuples)
			require.NoError(t, err)
			var have []string
			for _, v := range got {
				var f []string
				for _, col := range final.Columns {
					f = append(f, valueText(v[col.Attr]))
				}
				have = append(have, strings.Join(f, " "))
			}
			slices.Sort(want)
			slices.Sort(have)
			require.NotEmpty(t, want)
			require.Equal(t, want, have, c.text)
			t.Logf("seed %d: %d pairs, %d of e's %d tuples late for the join", seed, len(have), nLate, len(stuples))
			a.Free()
		}
	}
}

// TestIntervalJoinErrors: the interval joins refused, at the construct.
func TestIntervalJoinErrors(t *testing.T) {
	const v = "(SELECT k, MAX(n) AS top, window_end AS we, window_start AS ws FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k, window_start, window_end) v"
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"SELECT e.n FROM e JOIN " + v + " ON e.n = v.top", 5, 23 + len(v) + 2, // ON
			"a join of e with v, a view of TUMBLE windows of INTERVAL '1' SECOND, is an interval join where ON or WHERE bound e.ts below and above by the window's start or end (e.ts BETWEEN v.we - INTERVAL '1' SECOND AND v.we)"},
		{"SELECT e.n FROM e JOIN " + v + " ON e.n = v.top WHERE e.ts <= v.we", 5, 0,
			"bound e.ts below by the window's start or end"},
		{"SELECT e.n FROM e JOIN " + v + " ON e.n = v.top WHERE e.ts BETWEEN v.we - INTERVAL '2' SECOND AND v.we", 5, 0,
			"this bound lets e.ts reach INTERVAL '1' SECOND before the start of v's window: an interval join keeps it within the window's start and end (e.ts BETWEEN v.we - INTERVAL '1' SECOND AND v.we)"},
		{"SELECT e.n FROM e JOIN " + v + " ON e.n = v.top WHERE e.ts >= v.ws AND e.ts <= v.we + 1", 5, 0,
			"this bound lets e.ts reach INTERVAL '1' MILLISECOND past the end of v's window"},
		{"SELECT e.n FROM e JOIN " + v + " ON e.n = v.top WHERE e.ts >= v.ws AND e.ts < v.we + 2", 5, 0,
			"past the end of v's window"},
		{"SELECT e.n FROM e JOIN (SELECT MAX(n) AS top, window_end AS we FROM HOP(e, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND) GROUP BY window_start, window_end) v ON e.n = v.top WHERE e.ts BETWEEN v.we - INTERVAL '2' SECOND AND v.we", 5, 24,
			"v is a view of HOP windows (size 2000, slide 1000): an interval join reads a view of TUMBLE windows"},
		{"SELECT e.n, COUNT(*) FROM e JOIN " + v + " ON e.n = v.top WHERE e.ts BETWEEN v.ws AND v.we GROUP BY e.n", 5, 1,
			"an aggregation over an interval join is not supported: select the joined rows in a view, and aggregate over the view"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.n = b.n AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' SECOND", 5, 56,
			"this term compares the two sides of a regular join otherwise than as one column of each being equal: not supported (a regular join of two streams is supported on one equality of an integer or string column of each side (ON a.k = b.k), its other terms in ON and WHERE each of one side; an interval join is supported: of a stream S with a view V of TUMBLE windows of size W"},
		{"SELECT e.n FROM e [RANGE INTERVAL '1' SECOND] JOIN " + v + " ON e.n = v.top WHERE e.ts BETWEEN v.ws AND v.we", 5, 52,
			"a join of two streams needs a window on each side ([ROWS n], [RANGE ...], TUMBLE or HOP); v has none"},
	} {
		text := valuesBase + tc.text
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, text)
			assert.Equal(t, tc.line, e.Line, e.Caret(text))
			if tc.col > 0 {
				assert.Equal(t, tc.col, e.Column, e.Caret(text))
			}
			assert.Contains(t, e.Msg, tc.msg)
			checkErrorPosition(t, text, e)
		})
	}
	_ = rand.New // the generators above seed their own
}

// TestIntervalJoinStarKeepsTheTuple: a join that reads every column of the
// stream (S.*) times its tuples whole; one that reads some, only those.
func TestIntervalJoinStarKeepsTheTuple(t *testing.T) {
	const v = `CREATE VIEW v AS SELECT k, MAX(n) AS top, window_end AS we FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k, window_start, window_end;
`
	for _, c := range []struct{ sel, udf string }{
		{"SELECT e.*, v.top FROM e JOIN v ON e.k = v.k AND e.n = v.top WHERE e.ts BETWEEN v.we - INTERVAL '1' SECOND AND v.we", "then the input tuple"},
		{"SELECT e.s, e.u, v.top FROM e JOIN v ON e.k = v.k AND e.n = v.top WHERE e.ts BETWEEN v.we - INTERVAL '1' SECOND AND v.we", "then ts, k, n, s, u"},
	} {
		var a strview.Arena
		p, data := compileValues(t, v+c.sel, 3, 7, &a)
		retime := udfQuery(p)
		require.NotNil(t, retime, c.sel)
		assert.True(t, strings.HasSuffix(retime.Spec.Query.UDF.Name, c.udf), retime.Spec.Query.UDF.Name)
		outs := checkProgram(t, p, data, &a, 16)
		assert.NotEmpty(t, outs[len(outs)-1].tuples, c.sel)
		a.Free()
	}
}
