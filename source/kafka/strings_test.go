package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/strview"
)

// The string test tuple: event time (int64 at 0), id (int64 at 8), a and
// b (VARCHAR views at 16 and 32), val (int32 at 48).
const strTS = 56

func strLayout(t testing.TB) *source.Layout {
	l, err := source.NewLayout(strTS,
		source.Column{Name: "event_time", Kind: source.Int64, Offset: 0},
		source.Column{Name: "id", Kind: source.Int64, Offset: 8},
		source.Column{Name: "a", Kind: source.String, Offset: 16},
		source.Column{Name: "b", Kind: source.String, Offset: 32},
		source.Column{Name: "val", Kind: source.Int32, Offset: 48},
	)
	require.NoError(t, err)
	return l
}

// strDecoder is a JSON decoder whose long strings are *src's (src is
// set once the source is open, as a caller does).
func strDecoder(t testing.TB, src **Source, onErr source.OnError) source.Decoder {
	d, err := source.NewJSONDecoder(strLayout(t), source.JSONOptions{Options: source.Options{Input: "kafka", OnError: onErr,
		Strings: func(n int) ([]byte, error) { return (*src).Strings(n) }}})
	require.NoError(t, err)
	return d
}

// strNewDecoder makes decoders like strDecoder's for the fetchers
// (Config.NewDecoder).
func strNewDecoder(t testing.TB, onErr source.OnError) func(func(int) ([]byte, error)) (source.Decoder, error) {
	return func(strings func(int) ([]byte, error)) (source.Decoder, error) {
		return source.NewJSONDecoder(strLayout(t), source.JSONOptions{Options: source.Options{Input: "kafka", OnError: onErr, Strings: strings}})
	}
}

// srec is one string test record.
type srec struct {
	part int32
	time int64
	id   int64
	a, b string
	val  int32
	off  int64 // the offset of its record (values and produceStr set it)
}

func (r srec) json() []byte {
	a, _ := json.Marshal(r.a)
	b, _ := json.Marshal(r.b)
	return fmt.Appendf(nil, `{"event_time": %d, "id": %d, "a": %s, "b": %s, "val": %d}`, r.time, r.id, a, b, r.val)
}

// strOf is a string of n bytes that names id: its bytes differ from
// every other record's, some of them JSON escapes or UTF-8.
func strOf(id int64, col byte, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%c%d~", col, id)
	for i := 0; b.Len() < n; i++ {
		switch i % 97 {
		case 13:
			b.WriteByte('"')
		case 41:
			b.WriteByte('\\')
		case 70:
			if b.Len()+2 <= n { // not cut in two
				b.WriteString("é")
			}
		default:
			b.WriteByte(byte('a' + (int(id)+i)%26))
		}
	}
	return b.String()[:n]
}

// genStrRecords is genRecords with strings: mostly short or a few dozen
// bytes, some of kilobytes and a few of up to 64 KiB.
func genStrRecords(rnd func(int) int, parts, perPart int) [][]srec {
	length := func() int {
		switch k := rnd(100); {
		case k < 30:
			return rnd(strview.MaxInline + 1)
		case k < 80:
			return strview.MaxInline + 1 + rnd(100)
		case k < 97:
			return 1000 + rnd(4000)
		default:
			return 16<<10 + rnd(48<<10+1)
		}
	}
	var out [][]srec
	for p, rs := range genRecords(rnd, parts, perPart) {
		var sr []srec
		for _, r := range rs {
			sr = append(sr, srec{part: int32(p), time: r.time, id: r.id, val: r.val,
				a: strOf(r.id, 'a', length()), b: strOf(r.id, 'b', length())})
		}
		out = append(out, sr)
	}
	return out
}

// strOracle is the ids in the merge's order.
func strOracle(parts [][]srec) []int64 {
	var rs [][]rec
	for _, p := range parts {
		var x []rec
		for _, r := range p {
			x = append(x, rec{part: r.part, time: r.time, id: r.id, val: r.val, off: r.off})
		}
		rs = append(rs, x)
	}
	return ids(oracle(rs))
}

func byID(parts [][]srec) map[int64]srec {
	m := map[int64]srec{}
	for _, p := range parts {
		for _, r := range p {
			m[r.id] = r
		}
	}
	return m
}

// checkStrTuples checks tuples (as FillSome returned them, before the
// next call) against the records they are of, their strings included,
// and returns their ids.
func checkStrTuples(t testing.TB, tuples []byte, want map[int64]srec) []int64 {
	t.Helper()
	var got []int64
	for i := 0; i+strTS <= len(tuples); i += strTS {
		tu := tuples[i : i+strTS]
		id := int64(binary.LittleEndian.Uint64(tu[8:]))
		r, ok := want[id]
		if !assert.True(t, ok, "tuple %d: id %d is no record's", i/strTS, id) {
			continue
		}
		a := string(strview.Bytes(tu[16:32])) // copied out, as the engine does
		b := string(strview.Bytes(tu[32:48]))
		if a != r.a || b != r.b || int64(binary.LittleEndian.Uint64(tu)) != r.time ||
			int32(binary.LittleEndian.Uint32(tu[48:])) != r.val || !bytes.Equal(tu[52:], make([]byte, 4)) {
			t.Errorf("tuple %d (id %d): a %d bytes %q, b %d bytes %q, time %d, val %d; want a %d bytes, b %d bytes, time %d, val %d",
				i/strTS, id, len(a), trunc(a), len(b), trunc(b), int64(binary.LittleEndian.Uint64(tu)), int32(binary.LittleEndian.Uint32(tu[48:])),
				len(r.a), len(r.b), r.time, r.val)
		}
		got = append(got, id)
	}
	return got
}

func trunc(s string) string { return s[:min(len(s), 24)] }

// garble overwrites b, so that nothing read later can come from it.
func garble(b []byte) {
	for i := range b {
		b[i] = 0xa5
	}
}

// offlineStr is offline with strDecoder.
func offlineStr(t testing.TB, parts int, cfg Config) *Source {
	var s *Source
	cfg.Decoder = strDecoder(t, &s, source.Fail)
	s = offline(t, parts, cfg)
	t.Cleanup(func() {
		s.mu.Lock()
		for _, id := range s.strParts {
			s.unmapStrings(s.parts[id])
		}
		s.mu.Unlock()
	})
	return s
}

// fillOffline is FillSome's part under s.mu without a client: release,
// merge, marks; the pauses asked for are applied to paused.
func (s *Source) fillOffline(dst []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.release(); err != nil {
		return 0, err
	}
	n := s.merge(dst, 0)
	s.pushMarks()
	return n, nil
}

// feeder feeds an offline source a topic's values as polls would: a
// random chunk of each partition not paused (kgo's pauses), the record
// at offset i of partition p being vals[p][i].
type feeder struct {
	s      *Source
	vals   [][][]byte
	heads  []int
	paused map[int32]bool
}

func newFeeder(s *Source, vals [][][]byte) *feeder {
	return &feeder{s: s, vals: vals, heads: make([]int, len(vals)), paused: map[int32]bool{}}
}

// values groups each partition's records into values, with multi of one
// to three lines, and sets the records' offsets.
func values(data [][]srec, rnd func(int) int, multi bool) [][][]byte {
	out := make([][][]byte, len(data))
	for p, rs := range data {
		for len(rs) > 0 {
			k := 1
			if multi {
				k = min(len(rs), 1+rnd(3))
			}
			for i := range rs[:k] {
				rs[i].off = int64(len(out[p]))
			}
			var v []byte
			for i, r := range rs[:k] {
				if i > 0 {
					v = append(v, '\n')
				}
				v = append(v, r.json()...)
			}
			out[p] = append(out[p], v)
			rs = rs[k:]
		}
	}
	return out
}

// poll adds a random chunk of each partition not paused.
func (f *feeder) poll(t testing.TB, rnd func(int) int) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range f.vals {
		if f.paused[int32(p)] {
			continue
		}
		pt := s.parts[p]
		for k := rnd(6); k > 0 && f.heads[p] < len(f.vals[p]); k-- {
			require.NoError(t, s.add(pt, &kgo.Record{Partition: int32(p), Value: f.vals[p][f.heads[p]], Offset: int64(f.heads[p])}))
			f.heads[p]++
		}
		if f.heads[p] == len(f.vals[p]) && !pt.ended && pt.bhead == len(pt.backlog) {
			pt.ended = true // read to its end
			s.refresh(pt)
		}
		if pt.n >= s.bufCap && !pt.paused {
			pt.paused = true
			s.pauseReq = append(s.pauseReq, pt.id)
		}
	}
}

// fill is a FillSome call: the pauses it asks for are applied.
func (f *feeder) fill(t testing.TB, dst []byte) int {
	n, err := f.s.fillOffline(dst)
	require.NoError(t, err)
	for _, id := range f.s.pauseReq {
		f.paused[id] = true
	}
	for _, id := range f.s.resumeReq {
		f.paused[id] = false
	}
	f.s.pauseReq, f.s.resumeReq = nil, nil
	return n
}

// read reads up to n tuples (n < 0: all), checking each call's tuples
// after the next poll (which FillSome does not do: records decoded then
// must take none of their memory), and returns their ids.
func (f *feeder) read(t testing.TB, n int, want map[int64]srec, rnd func(int) int) []int64 {
	var got []int64
	buf := make([]byte, 7*strTS)
	for loops := 0; n < 0 || len(got) < n; loops++ {
		if loops == 100000 {
			for _, p := range f.s.parts {
				t.Logf("partition %d: %d buffered, backlog %d/%d, paused %v, ended %v, waiting %v, next %d, strings %d (produced to %d), fed %d/%d",
					p.id, p.n, p.bhead, len(p.backlog), p.paused, p.ended, p.waiting, p.next, p.strW, p.relEnd, f.heads[p.id], len(f.vals[p.id]))
			}
			t.Fatal("no progress")
		}
		k := 1 + rnd(7)
		if n >= 0 {
			k = min(k, n-len(got))
		}
		dst := buf[:k*strTS]
		m := f.fill(t, dst)
		f.poll(t, rnd)
		got = append(got, checkStrTuples(t, dst[:m], want)...)
		garble(dst)
		if m == 0 && f.s.atEndOffline() {
			break
		}
	}
	return got
}

// TestStringsOffline: records with long strings fed to the partitions as
// polls would, read through a small dst, each call's tuples checked
// before the next (and after more records are decoded); the memory of
// each partition is one region of StringBytes, reused, and full at
// times (records then wait), and the order is the merge's.
func TestStringsOffline(t *testing.T) {
	var waits int64
	for seed := uint64(1); seed <= 8; seed++ {
		rnd := rndOf(seed)
		parts := 1 + rnd(4)
		data := genStrRecords(rnd, parts, 150)
		want := byID(data)
		s := offlineStr(t, parts, Config{StringBytes: 128 << 10, bufferTuples: 1 + rnd(64)})
		got := newFeeder(s, values(data, rnd, seed%2 == 0)).read(t, -1, want, rnd)
		assert.Equal(t, strOracle(data), got, "seed %d", seed)
		var total uint64
		for _, id := range s.strParts {
			p := s.parts[id]
			assert.Equal(t, 128<<10, p.strs.Size())
			total += p.strW
		}
		assert.Greater(t, total, uint64(parts)*2*(128<<10), "seed %d: the regions are reused", seed)
		waits += s.stats.StringWaits
		t.Logf("seed %d: %d partitions, %d tuples, %d KiB of strings through %d regions of 128 KiB, %d waits",
			seed, parts, len(got), total>>10, len(s.strParts), s.stats.StringWaits)
	}
	assert.Positive(t, waits, "records waited for memory")
}

// TestStringsPositions: a stream cut at random points (Positions taken,
// a source opened at them, as Config.Resume does), also while records
// wait for string memory and within values of several lines, and cut
// again in the source resumed, is the stream of one read, strings and
// all.
func TestStringsPositions(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rnd := rndOf(seed + 1000)
		parts := 1 + rnd(3)
		data := genStrRecords(rnd, parts, 40)
		for _, rs := range data {
			for i := range rs {
				// Strings of about a kilobyte: a few records fill 4 KiB.
				rs[i].a = strOf(rs[i].id, 'a', 300+rnd(1200))
				rs[i].b = strOf(rs[i].id, 'b', rnd(60))
			}
		}
		want := byID(data)
		vals := values(data, rnd, true)
		order := strOracle(data)
		var got []int64
		var pos map[int32]Position
		cfg := Config{StringBytes: 4096, bufferTuples: 1 + rnd(20)}
		for cut := 0; ; cut++ {
			s := offlineStr(t, parts, cfg)
			f := newFeeder(s, vals)
			for id, ps := range pos {
				s.mu.Lock()
				s.assign(id, ps.Offset)
				s.parts[id].resumeAt(ps)
				s.mu.Unlock()
				f.heads[id] = int(ps.Offset)
			}
			n := -1
			if cut < 3 {
				n = rnd(len(order)/3 + 1)
			}
			got = append(got, f.read(t, n, want, rnd)...)
			if n < 0 {
				break
			}
			pos = s.Positions()
		}
		require.Equal(t, order, got, "seed %d", seed)
	}
}

// TestStringsNoAllocs: a record with long strings decoded, merged and its
// memory freed allocates nothing once the buffers have grown.
func TestStringsNoAllocs(t *testing.T) {
	const parts = 3
	s := offlineStr(t, parts, Config{StringBytes: 64 << 10})
	var recs [parts][]*kgo.Record
	for p := range parts {
		for i := range 64 {
			id := int64(p*1_000_000 + i)
			r := srec{time: int64(i), id: id, a: strOf(id, 'a', 20+i), b: strOf(id, 'b', 300+i)}
			recs[p] = append(recs[p], &kgo.Record{Value: r.json()})
		}
	}
	for _, p := range s.parts {
		p.ended = true // nothing holds the merge back
		s.refresh(p)
	}
	dst := make([]byte, 8*strTS)
	var off int64
	round := func() {
		for p := range parts {
			for i, r := range recs[p] {
				r.Offset = off + int64(i)
				require.NoError(t, s.add(s.parts[p], r))
			}
		}
		off += 1000
		for {
			n, err := s.fillOffline(dst)
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
	}
	for range 4 {
		round()
	}
	assert.Zero(t, testing.AllocsPerRun(20, round))
	assert.Equal(t, int64((4+1+20)*parts*64), s.stats.Tuples) // AllocsPerRun runs it once more
}

// TestStringsTooLong: a record whose long strings need more than a
// partition's string memory is an error naming the record and the
// setting; a decoder's Strings called outside the source's decoding is
// refused.
func TestStringsTooLong(t *testing.T) {
	s := offlineStr(t, 1, Config{StringBytes: 4096})
	r := srec{id: 1, a: strOf(1, 'a', 3000), b: strOf(1, 'b', 3000)}
	err := s.add(s.parts[0], &kgo.Record{Value: r.json(), Offset: 7})
	require.Error(t, err)
	assert.ErrorContains(t, err, "kafka source t: partition 0 offset 7:")
	assert.ErrorContains(t, err, "6000 bytes, more than a partition's string memory of 4096 (Config.StringBytes)")
	_, err = s.Strings(20)
	assert.ErrorContains(t, err, "outside the source's decoding")
	_, err = newSource(Config{Brokers: []string{"x:1"}, Topic: "t", Binary: true, TupleSize: 8, StringBytes: -1})
	assert.ErrorContains(t, err, "StringBytes -1")
}

// TestStringsRevoke: a partition revoked drops its buffered tuples and
// the records waiting for memory; the strings FillSome returned last stay
// valid until the next call, which unmaps the partition's memory; given
// back, it maps memory again.
func TestStringsRevoke(t *testing.T) {
	s := offlineStr(t, 2, Config{StringBytes: 4096})
	mk := func(p, i int) srec {
		id := int64(p*1_000_000 + i)
		return srec{part: int32(p), time: int64(i), id: id, a: strOf(id, 'a', 1000), b: strOf(id, 'b', 20)}
	}
	var data [2][]srec
	for p := range 2 {
		for i := range 8 {
			data[p] = append(data[p], mk(p, i))
		}
	}
	want := byID([][]srec{data[0], data[1]})
	s.mu.Lock()
	for p := range 2 {
		for i, r := range data[p] {
			require.NoError(t, s.add(s.parts[p], &kgo.Record{Value: r.json(), Offset: int64(i)}))
		}
	}
	// 4 KiB: four records of 1020 bytes each fit; the rest wait.
	assert.Equal(t, 4, s.parts[0].n)
	assert.Equal(t, 4, len(s.parts[0].backlog))
	s.mu.Unlock()
	dst := make([]byte, 3*strTS)
	n, err := s.fillOffline(dst)
	require.NoError(t, err)
	got := checkStrTuples(t, dst[:n], want)
	assert.Equal(t, []int64{0, 1_000_000, 1}, got)

	// Partition 0 revoked: its tuples and waiting records dropped; the
	// tuples just returned are still readable.
	s.mu.Lock()
	s.unassign(0)
	s.mu.Unlock()
	assert.Equal(t, []int64{0, 1_000_000, 1}, checkStrTuples(t, dst[:n], want))
	assert.Equal(t, Position{}, func() Position { p, _ := s.parts[0].position(); return p }())
	garble(dst)
	// Partition 1 alone from here on.
	for {
		n, err = s.fillOffline(dst)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		got = append(got, checkStrTuples(t, dst[:n], want)...)
		garble(dst)
	}
	assert.Nil(t, s.parts[0].strs, "the revoked partition's memory is unmapped")
	assert.Equal(t, []int32{1}, s.strParts)
	assert.Equal(t, []int64{0, 1_000_000, 1, 1_000_001, 1_000_002, 1_000_003, 1_000_004, 1_000_005, 1_000_006, 1_000_007}, got)

	// Given back, from record 2: memory mapped again.
	s.mu.Lock()
	s.parts[1].ended = true
	s.refresh(s.parts[1])
	s.assign(0, 2)
	for i, r := range data[0][2:] {
		require.NoError(t, s.add(s.parts[0], &kgo.Record{Value: r.json(), Offset: int64(2 + i)}))
	}
	s.mu.Unlock()
	got = nil
	for {
		n, err = s.fillOffline(dst)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		got = append(got, checkStrTuples(t, dst[:n], want)...)
	}
	assert.Equal(t, []int64{2, 3, 4, 5, 6, 7}, got)
}

// TestStringsSkipFillsMemory: resumed within a value whose lines to skip
// have more long strings than the partition's memory holds, the source
// frees theirs as it goes: the first FillSome gives the line after them.
func TestStringsSkipFillsMemory(t *testing.T) {
	s := offlineStr(t, 1, Config{StringBytes: 4096})
	var v []byte
	var last srec
	for i := range 8 {
		last = srec{time: int64(i), id: int64(i), a: strOf(int64(i), 'a', 1500), b: "b"}
		if i > 0 {
			v = append(v, '\n')
		}
		v = append(v, last.json()...)
	}
	s.mu.Lock()
	s.assign(0, 3)
	s.parts[0].resumeAt(Position{Offset: 3, Skip: 7})
	require.NoError(t, s.add(s.parts[0], &kgo.Record{Value: v, Offset: 3}))
	s.parts[0].ended = true
	s.refresh(s.parts[0])
	s.mu.Unlock()
	dst := make([]byte, 2*strTS)
	n, err := s.fillOffline(dst)
	require.NoError(t, err)
	assert.Equal(t, []int64{7}, checkStrTuples(t, dst[:n], map[int64]srec{7: last}))
	assert.Equal(t, map[int32]Position{0: {Offset: 4}}, s.Positions())
}
