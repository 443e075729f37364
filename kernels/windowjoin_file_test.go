package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestFileRowsMatchesOneByOne: row windows' tuples filed pane by pane
// (fileRows) land as they do tuple by tuple (fileOneByOne), with watermarks
// set around the panes' Open, so that runs late whole are taken too: the
// same panes, runs, counters and watermark.
func TestFileRowsMatchesOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 20))
	for c := range 200 {
		size := 1 + r.Int64N(40)
		w := query.Sliding(size, 1+r.Int64N(size))
		w.Type = query.Rows
		w.Delay = r.Int64N(3) * r.Int64N(10)
		fast, slow := twinJoins(t, w)
		for range 20 {
			side := r.IntN(2)
			if r.IntN(4) == 0 { // a watermark ahead of the index
				wm := fast.sides[side].index + r.Int64N(3*size) - size
				fast.sides[side].wm, slow.sides[side].wm = wm, wm
			}
			in := make([]byte, 16*r.IntN(3*int(size)))
			for i := range in {
				in[i] = byte(r.Uint32())
			}
			rf, okf := fileBoth(fast, side, in, func() (Refused, bool) { return fast.fileRows(side) })
			rs, oks := fileBoth(slow, side, in, func() (Refused, bool) { return slow.fileOneByOne(side) })
			require.Equal(t, oks, okf)
			require.Equal(t, rs, rf)
			sameSides(t, slow, fast, c)
		}
	}
}

// TestFileCutMatchesOneByOne: time windows' tuples cut off the lock and
// filed run by run (Cut, fileCut) land as they do tuple by tuple
// (fileOneByOne): inputs out of order, late against the side's watermark
// or against their own input's earlier tuples, refused ones (below the
// lowest position), empty ones.
func TestFileCutMatchesOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 21))
	var cut JoinCut
	for c := range 200 {
		size := 1 + r.Int64N(40)
		w := query.Sliding(size, 1+r.Int64N(size))
		w.Delay = r.Int64N(3) * r.Int64N(10)
		fast, slow := twinJoins(t, w)
		now := r.Int64N(100)
		for range 20 {
			side := r.IntN(2)
			in := make([]byte, 16*r.IntN(3*int(size)))
			for o := 0; o < len(in); o += 16 {
				now += r.Int64N(3)
				pos := now - r.Int64N(2*size+10)
				if r.IntN(200) == 0 {
					pos = math.MinInt64 + r.Int64N(5) // refused
				}
				binary.LittleEndian.PutUint64(in[o:], uint64(pos))
				binary.LittleEndian.PutUint64(in[o+8:], r.Uint64())
			}
			fast.Cut(side, in, &cut)
			rf, okf := fileBoth(fast, side, in, func() (Refused, bool) { return fast.fileCut(side, &cut) })
			rs, oks := fileBoth(slow, side, in, func() (Refused, bool) { return slow.fileOneByOne(side) })
			require.Equal(t, oks, okf, "case %d", c)
			require.Equal(t, rs, rf, "case %d", c)
			sameSides(t, slow, fast, c)
		}
	}
}

// twinJoins are two joins of one window over 16-byte tuples.
func twinJoins(t *testing.T, w query.Window) (*WindowJoin, *WindowJoin) {
	s, err := query.NewSchema(16, query.Attribute{Name: "x", Type: query.Int64, Offset: 0})
	require.NoError(t, err)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: w}
	a, err := NewWindowJoin(j)
	require.NoError(t, err)
	b, err := NewWindowJoin(j)
	require.NoError(t, err)
	return a, b
}

// fileBoth files a copy of in into side of wj with file.
func fileBoth(wj *WindowJoin, side int, in []byte, file func() (Refused, bool)) (Refused, bool) {
	wj.adding = wj.newInput(side)
	wj.adding.tuples = append(wj.adding.tuples, in...)
	r, ok := file()
	wj.adding = nil
	return r, ok
}

// sameSides: want's and got's sides hold the same panes, runs, counters
// and watermarks.
func sameSides(t *testing.T, want, got *WindowJoin, c int) {
	t.Helper()
	for k := range 2 {
		a, b := &got.sides[k], &want.sides[k]
		require.Equal(t, [4]int64{b.index, int64(b.tuples), int64(b.late), b.wm}, [4]int64{a.index, int64(a.tuples), int64(a.late), a.wm}, "case %d side %d", c, k)
		require.Equal(t, len(b.panes), len(a.panes), "case %d side %d", c, k)
		for i := range a.panes {
			wantData, gotData := bytes.Join(b.panes[i].chunks, nil), bytes.Join(a.panes[i].chunks, nil)
			if b.panes[i].pane == a.panes[i].pane && b.panes[i].n == a.panes[i].n && bytes.Equal(wantData, gotData) {
				continue // assert only where they differ: each call's t.Helper walks the stack
			}
			assert.Equal(t, b.panes[i].pane, a.panes[i].pane)
			assert.Equal(t, b.panes[i].n, a.panes[i].n)
			assert.Equal(t, wantData, gotData, "case %d side %d pane %d", c, k, a.panes[i].pane)
		}
	}
}

// fileOneByOne is the oracle of the join's filing: each tuple's position
// read, its pane found and its lateness checked in turn (the join filed
// so before it cut its inputs into runs), row windows' too.
func (wj *WindowJoin) fileOneByOne(side int) (r Refused, ok bool) {
	tuples := wj.adding.tuples
	sd := &wj.sides[side]
	ts := sd.tupleSize
	// The pane of the tuple before, its positions and its Open: the next
	// tuple mostly falls in it. run is where the tuples of pane p not yet
	// filed begin (-1: none), filed as one run each.
	var p, pStart, pLast, open int64
	have, run := false, -1
	var pn *joinPane
	for o := 0; o+ts <= len(tuples); o += ts {
		pos := sd.index
		if !wj.rows {
			pos = int64(binary.LittleEndian.Uint64(tuples[o:]))
		}
		if !have || pos < pStart || pos > pLast {
			if run >= 0 {
				wj.file(sd, pn, tuples[run:o])
				run = -1
			}
			np := wj.spec.PaneOf(pos)
			if np < wj.lowest {
				return Refused{Tuple: uint64(sd.index), Pos: pos}, false
			}
			p, pStart, pLast, open = np, wj.spec.PaneStart(np), wj.spec.PaneLast(np), wj.spec.Open(np)
			have, pn = true, nil
		}
		sd.index++
		sd.tuples++
		prev := sd.wm
		sd.wm = max(sd.wm, pos)
		if prev > open {
			if run >= 0 {
				wj.file(sd, pn, tuples[run:o])
				run = -1
			}
			sd.late++
			continue
		}
		if run < 0 {
			if pn == nil {
				pn = sd.pane(p)
			}
			run = o
		}
	}
	if run >= 0 {
		wj.file(sd, pn, tuples[run:len(tuples)/ts*ts])
	}
	return Refused{}, true
}
