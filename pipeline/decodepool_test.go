package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/strview"
)

// decodeOne is the oracle: one decoder over the whole input, its tuples
// decoded to values, the records it skipped and the error it stopped at.
func decodeOne(t *testing.T, src *sql.Source, in []byte) ([][]reference.Value, int64, error) {
	t.Helper()
	a := strview.NewArena(0)
	defer a.Free()
	d, err := newDecoder(src, "in", decoderMemory{strings: source.ArenaStrings(a)})
	require.NoError(t, err)
	ts := d.TupleSize()
	var out [][]reference.Value
	dst := make([]byte, 64*ts)
	var stop error
	for rest := in; ; {
		n, c, err := d.Decode(dst, rest, true)
		v, derr := reference.DecodeTuples(src.Schema, dst[:n*ts])
		require.NoError(t, derr)
		out = append(out, v...)
		rest = rest[c:]
		if err != nil {
			stop = err
			break
		}
		if len(rest) == 0 {
			break
		}
	}
	return out, d.Malformed(), stop
}

// decodePool runs a parallelDecoder over in, filling buffers of uneven
// sizes, and decodes each fill before the next (its strings live so long).
func decodePool(t *testing.T, src *sql.Source, in []byte, decoders, block int, rng *rand.Rand) ([][]reference.Value, int64, error) {
	t.Helper()
	p, err := newParallelDecoder(src, "in", nil, bytes.NewReader(in), decoders, block)
	require.NoError(t, err)
	defer p.Close()
	ts := src.Schema.TupleSize
	var out [][]reference.Value
	for {
		dst := make([]byte, rng.IntN(50)*ts+rng.IntN(ts)+ts)
		n, err := p.Fill(dst)
		require.Zero(t, n%ts)
		v, derr := reference.DecodeTuples(src.Schema, dst[:n])
		require.NoError(t, derr)
		out = append(out, v...)
		if err == io.EOF {
			return out, p.Malformed(), nil
		}
		if err != nil {
			return out, p.Malformed(), err
		}
	}
}

// randomRecords writes n records of (ts, k, name, x) as CSV (header
// first where header, its columns in another order than the DDL's) or
// JSON: names long and short, with commas, quotes and line breaks in
// CSV's quoted fields; a few records malformed where bad.
func randomRecords(rng *rand.Rand, n int, format string, header, bad bool) []byte {
	var b bytes.Buffer
	if header {
		b.WriteString("name,x,ts,k\n")
	}
	for i := range n {
		name := strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(40))
		if rng.IntN(5) == 0 {
			name += ", \"quoted\"\nsecond line"
		}
		x := fmt.Sprintf("%d.%02d", rng.IntN(1000), rng.IntN(100))
		k := fmt.Sprint(rng.IntN(100))
		if bad && rng.IntN(97) == 0 {
			k = "not a number"
		}
		ts := fmt.Sprint(1000 + i)
		switch {
		case format == "json":
			fmt.Fprintf(&b, `{"ts": %s, "k": %q, "name": %q, "x": %s}`+"\n", ts, k, name, x)
		case header:
			fmt.Fprintf(&b, "%s,%s,%s,%s\n", csvField(name), x, ts, k)
		default:
			fmt.Fprintf(&b, "%s,%s,%s,%s\n", ts, k, csvField(name), x)
		}
	}
	return b.Bytes()
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") || s == "" {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func csvSource(t *testing.T, format string, header bool, onError string) *sql.Source {
	t.Helper()
	with := fmt.Sprintf("connector = 'go', format = '%s', on_error = '%s'", format, onError)
	if header {
		with += ", header = 'true'"
	}
	p, err := sql.Compile(fmt.Sprintf(`CREATE SOURCE s (ts BIGINT, k INT, name VARCHAR, x DOUBLE) WITH (%s);
SELECT ts, k, name, x FROM s;`, with))
	require.NoError(t, err)
	return p.Sources[0]
}

// TestParallelDecoderMatchesOne: over CSV (with a header in another
// order, without one) and JSON, records with quoted line breaks across
// blocks, malformed records skipped or failing, blocks smaller than a
// record and larger than the input, any number of decoders: the tuples,
// the count of records skipped and the error (its line the input's) are
// one decoder's.
func TestParallelDecoderMatchesOne(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format  string
		header  bool
		onError string
	}{{"csv", true, "skip"}, {"csv", false, "skip"}, {"json", false, "skip"}, {"csv", true, "fail"}, {"json", false, "fail"}} {
		src := csvSource(t, c.format, c.header, c.onError)
		for seed := range uint64(testenv.Scale(2, 4)) {
			rng := rand.New(rand.NewPCG(seed, 7))
			in := randomRecords(rng, 300+rng.IntN(700), c.format, c.header, true)
			want, wantBad, wantErr := decodeOne(t, src, in)
			if c.onError == "skip" {
				require.NoError(t, wantErr)
			}
			for di, decoders := range []int{1, 2, 5} {
				for bi, block := range []int{16, 300, 4096, 1 << 20} {
					if (di+bi+int(seed))%3 != 0 && !testenv.Full() {
						continue // by default each seed every block size and every number of decoders, not every pair
					}
					name := fmt.Sprintf("%s header %v %s seed %d decoders %d block %d", c.format, c.header, c.onError, seed, decoders, block)
					got, gotBad, gotErr := decodePool(t, src, in, decoders, block, rng)
					require.Equal(t, len(want), len(got), name)
					assert.Equal(t, want, got, name)
					assert.Equal(t, wantBad, gotBad, name)
					if wantErr == nil {
						assert.NoError(t, gotErr, name)
						continue
					}
					var we, ge *source.Error
					require.True(t, errors.As(wantErr, &we), name)
					require.True(t, errors.As(gotErr, &ge), "%s: %v", name, gotErr)
					assert.Equal(t, *we, *ge, name)
				}
			}
		}
	}
}

// TestParallelDecoderEdges: an empty input, a header alone, no final line
// break decode as one decoder does; Close before the end returns.
func TestParallelDecoderEdges(t *testing.T) {
	t.Parallel()
	src := csvSource(t, "csv", true, "fail")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, in := range []string{"", "name,x,ts,k\n", "name,x,ts,k", "name,x,ts,k\nab,1.5,7,3", "name,x,ts,k\nab,1.5,7,3\n"} {
		want, _, wantErr := decodeOne(t, src, []byte(in))
		got, _, gotErr := decodePool(t, src, []byte(in), 3, 4, rng)
		assert.Equal(t, want, got, "%q", in)
		assert.Equal(t, wantErr, gotErr, "%q", in)
	}
	// Close with blocks decoded and waiting returns: it waits for every
	// goroutine of the pool.
	in := randomRecords(rng, 5000, "csv", true, false)
	p, err := newParallelDecoder(src, "in", nil, bytes.NewReader(in), 2, 256)
	require.NoError(t, err)
	n, err := p.Fill(make([]byte, 10*src.Schema.TupleSize))
	require.NoError(t, err)
	assert.Equal(t, 10*src.Schema.TupleSize, n)
	p.Close()
	p.Close()
}

// TestParallelDecoderReadError: an error of the reader stops Fill after
// the records before it, with that error.
func TestParallelDecoderReadError(t *testing.T) {
	t.Parallel()
	src := csvSource(t, "json", false, "fail")
	in := randomRecords(rand.New(rand.NewPCG(3, 4)), 200, "json", false, false)
	broken := errors.New("disk gone")
	r := io.MultiReader(bytes.NewReader(in), iotestErrReader{broken})
	p, err := newParallelDecoder(src, "in", nil, r, 2, 512)
	require.NoError(t, err)
	defer p.Close()
	total := 0
	for {
		n, err := p.Fill(make([]byte, 64*src.Schema.TupleSize))
		total += n
		if err != nil {
			assert.ErrorIs(t, err, broken)
			assert.ErrorContains(t, err, "read in after line ")
			break
		}
	}
	// The records before the error that made whole blocks came through.
	assert.LessOrEqual(t, total, 200*src.Schema.TupleSize)
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

// TestParallelDecoderFillAfterClose: Fill after Close is an error, not a
// panic or a hang.
func TestParallelDecoderFillAfterClose(t *testing.T) {
	t.Parallel()
	src := csvSource(t, "csv", false, "fail")
	in := randomRecords(rand.New(rand.NewPCG(5, 6)), 3000, "csv", false, false)
	p, err := newParallelDecoder(src, "in", nil, bytes.NewReader(in), 2, 128)
	require.NoError(t, err)
	buf := make([]byte, 7*src.Schema.TupleSize)
	for range 20 {
		_, err := p.Fill(buf)
		require.NoError(t, err)
	}
	p.Close()
	_, err = p.Fill(buf)
	assert.ErrorIs(t, err, errDecoderClosed)
}

// TestDecodeBlockMakesItsTuplesOnce: a block's tuple buffer is made at
// the size of a tuple per line, and an eighth more, at once (it was grown
// by doubling, each step a copy into fresh memory, which cost more than
// the decoding of a file of short records), and a recycled block decodes
// into the same one, even where it holds a few more lines than the block
// the buffer was made for.
func TestDecodeBlockMakesItsTuplesOnce(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"csv", "json"} {
		src := csvSource(t, format, false, "fail")
		p := &parallelDecoder{src: src, name: "in", csv: format == "csv"}
		// The block's text outside the Go heap, as read puts it (its
		// long strings' views point there), in an arena of its own here.
		text := strview.NewArena(0)
		defer text.Free()
		raw := text.Copy(randomRecords(rand.New(rand.NewPCG(5, 6)), 2000, format, false, false))
		a := strview.NewArena(0)
		b := &decodeBlock{raw: raw, strings: a}
		p.decodeBlock(b, nil)
		require.NoError(t, b.err)
		ts := src.Schema.TupleSize
		lines := bytes.Count(raw, []byte{'\n'})
		assert.Equal(t, 2000*ts, len(b.tuples), format)
		need := (lines + 1) * ts
		assert.Equal(t, need+need/8, cap(b.tuples), format)
		first := &b.tuples[:1][0]
		want := slices.Clone(b.tuples)
		a.Reset()
		b.tuples = b.tuples[:0]
		p.decodeBlock(b, nil)
		require.NoError(t, b.err)
		assert.Same(t, first, &b.tuples[:1][0], "%s: the recycled block's buffer", format)
		assert.Equal(t, want, b.tuples, format)

		more := text.Copy(randomRecords(rand.New(rand.NewPCG(7, 8)), 2100, format, false, false))
		a.Reset()
		b.raw, b.tuples = more, b.tuples[:0]
		p.decodeBlock(b, nil)
		require.NoError(t, b.err)
		assert.Same(t, first, &b.tuples[:1][0], "%s: a block of 5%% more lines in the same buffer", format)
		assert.Equal(t, 2100*ts, len(b.tuples), format)
		a.Free()
	}
}

// TestParallelDecoderAwkwardInputs: inputs where a block's start or its
// header could differ from one decoder's reading, at many block sizes:
// text after a closing quote and then a quoted line break on the line
// (the decoder ends that record with its line), empty lines before the
// header, a header with a quoted line break, CRLF, a byte order mark in
// the middle of the input (a record's text there, not the input's mark),
// one at its start before a quoted field (the decoder drops the mark: the
// quote opens the field).
func TestParallelDecoderAwkwardInputs(t *testing.T) {
	t.Parallel()
	rows := func(n int, crlf bool) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%d,%d,nm%d,1.5\n", 1000+i, i%7, i)
		}
		if crlf {
			return strings.ReplaceAll(b.String(), "\n", "\r\n")
		}
		return b.String()
	}
	hrows := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "nm%d,1.5,%d,%d\n", i, 1000+i, i%7)
		}
		return b.String()
	}
	bom := "\xef\xbb\xbf"
	jsonRows := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"ts": %d, "k": %d, "name": "nm%d", "x": 1.5}`+"\n", 1000+i, i%7, i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name, format string
		header       bool
		in           string
	}{
		{"quote then text", "csv", false, rows(5, false) + "1,2,\"a\"x,\"b\n3,4,\"c\nd\",1.5\n" + rows(5, false)},
		{"quote then text, no quote after", "csv", false, rows(5, false) + "1,2,\"a\"x,b\n" + rows(30, false)},
		{"empty lines before the header", "csv", true, "\n\r\nname,x,ts,k\n" + hrows(40)},
		{"header with a line break", "csv", true, "name,x,ts,k,\"ex\ntra\"\n" + strings.ReplaceAll(hrows(40), "\n", ",e\n")},
		{"crlf", "csv", false, rows(40, true)},
		{"mark at the start", "csv", false, bom + rows(40, false)},
		{"mark, then a quoted line break", "csv", false, bom + "\"1\n\",2,a,1.5\n" + rows(40, false)},
		{"mark, then a quoted comma", "csv", false, bom + "\"1,\",2,a,1.5\n" + "3,4,\"c\nd\",1.5\n" + rows(40, false)},
		{"mark, then a header with a line break", "csv", true, bom + "\"ex\ntra\",name,x,ts,k\n" + strings.TrimSuffix(strings.ReplaceAll("\n"+hrows(40), "\n", "\ne,"), "e,")[1:]},
		{"mark in the middle", "csv", false, rows(20, false) + bom + rows(20, false)},
		{"json mark in the middle", "json", false, jsonRows(20) + bom + jsonRows(20)},
	} {
		src := csvSource(t, c.format, c.header, "skip")
		want, wantBad, wantErr := decodeOne(t, src, []byte(c.in))
		require.NoError(t, wantErr, c.name)
		rng := rand.New(rand.NewPCG(5, 6))
		for block := 8; block < 400; block += testenv.Scale(7, 3) { // blocks of every third size in the long run
			got, gotBad, gotErr := decodePool(t, src, []byte(c.in), 3, block, rng)
			require.NoError(t, gotErr, "%s, block %d", c.name, block)
			if !assert.Equal(t, want, got, "%s, block %d", c.name, block) || !assert.Equal(t, wantBad, gotBad, "%s, block %d: skipped", c.name, block) {
				break
			}
		}
	}
}

// TestParallelDecoderBlocksShrink: after a record longer than a block the
// blocks are of the block size again: the records after it are shared
// among the decoders as before it.
func TestParallelDecoderBlocksShrink(t *testing.T) {
	t.Parallel()
	src := csvSource(t, "csv", false, "fail")
	var in bytes.Buffer
	fmt.Fprintf(&in, "1,1,%s,1.5\n", strings.Repeat("n", 64<<10))
	for i := range 50000 {
		fmt.Fprintf(&in, "%d,%d,nm%d,1.5\n", 2+i, i%7, i)
	}
	const block = 4096
	p, err := newParallelDecoder(src, "in", nil, bytes.NewReader(in.Bytes()), 2, block)
	require.NoError(t, err)
	defer p.Close()
	dst := make([]byte, 64*src.Schema.TupleSize)
	sizes := map[int64]int{} // by first line
	for {
		n, err := p.Fill(dst)
		if n == 0 || err != nil {
			break
		}
		for _, b := range append(p.done, p.cur) { // the blocks this Fill took tuples of
			if b != nil {
				sizes[b.firstLine] = len(b.raw)
			}
		}
	}
	large := 0
	for _, n := range sizes {
		if n > 2*block {
			large++
		}
	}
	assert.Greater(t, len(sizes), 100)
	assert.LessOrEqual(t, large, 2, "blocks larger than two block sizes (the long record's): %v", sizes)
}
