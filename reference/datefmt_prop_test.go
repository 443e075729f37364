package reference_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/temporal"
)

// The engine's DATE_FORMAT and CAST(ts AS VARCHAR) (package temporal) and
// the oracle's (written from java.time's rules over Go's time package)
// must agree on every timestamp, the extremes of int64 included, and every
// pattern letter that the compiler accepts, at every count.

// patternLetters are the letters CompileFormat accepts, each with the most
// of it in a row that java.time allows.
var patternLetters = []struct {
	c    byte
	most int
}{
	{'y', 19}, {'u', 19}, {'M', 5}, {'L', 5}, {'Q', 5}, {'q', 5}, {'d', 2}, {'D', 3},
	{'E', 5}, {'a', 1}, {'H', 2}, {'k', 2}, {'K', 2}, {'h', 2}, {'m', 2}, {'s', 2}, {'S', 9},
}

// patternLiterals are the pieces between fields: other characters, quoted
// text (letters, ” and an escaped quote in it), optional sections.
var patternLiterals = []string{
	"", " ", "-", ":", ".", "/", ", ", "'T'", "'Z'", "''", "'o''clock'", "'yMd Q'",
	"é", "😀", "[", "]", "(", ")", "~", "'[x]'",
}

// extremeTimes are timestamps at the edges: of int64, of years 0 and 1,
// of four-digit years, of the epoch.
var extremeTimes = []int64{
	math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1, -1, 0, 1,
	253402300799999, 253402300800000, // 9999-12-31 23:59:59.999, 10000-01-01
	-62135596800000, -62135596800001, // 0001-01-01, a ms before (year 0)
	-62167219200000, -62167219200001, // 0000-01-01, a ms before (year -1)
	-377705116800000, -377705116800001, // -10000-01-01 and a ms before
	8210298412799999, -8210298412800000,
}

func randomTime(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return int64(r.Uint64()) // anywhere in int64
	case 1:
		return extremeTimes[r.IntN(len(extremeTimes))] + r.Int64N(3) - 1
	case 2: // years -10000 to 10000
		return r.Int64N(2*377705116800000) - 377705116800000
	default: // years 1900 to 2100
		return r.Int64N(6311433600000) - 2208988800000
	}
}

func randomPattern(r *rand.Rand) string {
	var b strings.Builder
	open := 0
	var last byte
	for n := 1 + r.IntN(6); n > 0; n-- {
		if r.IntN(3) == 0 {
			lit := patternLiterals[r.IntN(len(patternLiterals))]
			switch lit {
			case "[":
				open++
			case "]":
				if open == 0 {
					continue
				}
				open--
			}
			if lit != "" && lit[0] == '\'' && last == '\'' {
				b.WriteByte(' ') // 'a''b' is one quoted piece
			}
			b.WriteString(lit)
			if lit != "" {
				last = lit[len(lit)-1]
			}
			continue
		}
		l := patternLetters[r.IntN(len(patternLetters))]
		if last == l.c {
			b.WriteByte(' ') // else the runs would merge into one
		}
		b.WriteString(strings.Repeat(string(l.c), 1+r.IntN(l.most)))
		last = l.c
	}
	return b.String()
}

var noColumns = &query.Schema{}

func oracleFormat(ms int64, pattern string) (string, error) {
	v, err := reference.Eval(query.Call{Fn: "date_format", Args: []query.Expr{
		query.Cast{X: query.Int(ms), To: query.TimeValue}, query.Str(pattern),
	}}, noColumns, nil)
	return v.Str, err
}

func TestDateFormatMatchesEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 24))
	// Every letter at every count, alone, at every extreme.
	var patterns []string
	for _, l := range patternLetters {
		for n := 1; n <= l.most; n++ {
			patterns = append(patterns, strings.Repeat(string(l.c), n))
		}
	}
	for range testenv.Scale(300, 3000) {
		patterns = append(patterns, randomPattern(r))
	}
	for _, p := range patterns {
		f, err := temporal.CompileFormat(p)
		require.NoError(t, err, p)
		times := append([]int64(nil), extremeTimes...)
		for range 20 {
			times = append(times, randomTime(r))
		}
		for _, ms := range times {
			want, err := oracleFormat(ms, p)
			require.NoError(t, err, "DATE_FORMAT(%d, %q)", ms, p)
			require.Equal(t, want, string(f.Append(nil, ms)),
				"DATE_FORMAT(%s, %q) (%d ms)", time.UnixMilli(ms).UTC(), p, ms)
		}
	}
}

// TestDateFormatRefusedAlike: a pattern the engine refuses the oracle
// refuses too (the compiler stops such a query, so the oracle never meets
// one), and the other way round.
func TestDateFormatRefusedAlike(t *testing.T) {
	for _, p := range []string{
		"yyyy-MM-dd b", "YYYY", "G", "w", "W", "e", "c", "n", "N", "A", "z", "Z", "X", "x", "O", "V", "v",
		strings.Repeat("y", 20), strings.Repeat("u", 20), "dd ddd", "DDDD", "MMMMMM", "LLLLLL",
		"QQQQQQ", "qqqqqq", "EEEEEE", "aa", "HHH", "kkk", "KKK", "hhh", "mmm", "sss", "SSSSSSSSSS",
		"yyyy 'at", "'", "yyyy]", "[]]", "yyyy #", "{", "}",
		"[yyyy", "[[yyyy]", "''", "yyyy ''", "'a''b'",
	} {
		_, engineErr := temporal.CompileFormat(p)
		_, oracleErr := oracleFormat(0, p)
		require.Equal(t, engineErr == nil, oracleErr == nil, "%q: engine %v, oracle %v", p, engineErr, oracleErr)
	}
}

// TestTimestampTextMatchesEngine: CAST(ts AS VARCHAR) in the oracle is
// temporal.AppendTimestamp, at the extremes too.
func TestTimestampTextMatchesEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	times := append([]int64(nil), extremeTimes...)
	for range testenv.Scale(20000, 200000) {
		times = append(times, randomTime(r))
	}
	for _, ms := range times {
		v, err := reference.Eval(query.Cast{X: query.Cast{X: query.Int(ms), To: query.TimeValue}, To: query.StringValue}, noColumns, nil)
		require.NoError(t, err)
		require.Equal(t, string(temporal.AppendTimestamp(nil, ms)), v.Str, fmt.Sprint(ms))
	}
}
