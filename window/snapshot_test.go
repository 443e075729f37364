package window

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

// TestSnapshotRestoreContinues: an assembler restored from a snapshot
// taken after k tasks, fed the rest, emits exactly what the uninterrupted
// one emits after k (windows, rows, values) and ends with its counters;
// the restored assembler's snapshot is the original's.
func TestSnapshotRestoreContinues(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 1))
	// 300 in the long run, 60 under -short, 75 by default.
	cases := testenv.Scale(75, 300)
	if testing.Short() {
		cases = min(cases, 60)
	}
	for c := range cases {
		s := randomSpec(r)
		if c%3 == 1 {
			s.Delay = r.Int64N(3*s.Size + 1)
		}
		l := &Layout{Groups: 1 + r.IntN(16), Hashed: r.IntN(2) == 0}
		for range r.IntN(4) {
			l.Kinds = append(l.Kinds, allKinds[r.IntN(len(allKinds))])
		}
		keep := testFilters[r.IntN(len(testFilters))]
		name := fmt.Sprintf("case %d size %d slide %d pane %d delay %d hashed %v kinds %v", c, s.Size, s.Slide, s.Pane, s.Delay, l.Hashed, l.Kinds)

		tasks := 50 + r.IntN(300)
		k := r.IntN(tasks + 1)
		whole := NewAssembler(s, l)
		whole.SetFilter(keep)
		first := NewAssembler(s, l)
		first.SetFilter(keep)
		var want, got []winOut
		emitWant, emitGot := collect(&want), collect(&got)
		now := r.Int64N(2000) - 1000
		var res TaskResult
		var restored *Assembler
		for i := range tasks {
			if i == k {
				snap := first.AppendSnapshot([]byte("prefix"))
				restored = NewAssembler(s, l)
				restored.SetFilter(keep)
				rest, err := restored.RestoreSnapshot(snap[len("prefix"):])
				require.NoError(t, err, name)
				assert.Empty(t, rest, name)
				require.Equal(t, first.AppendSnapshot(nil), restored.AppendSnapshot(nil), name)
				require.Equal(t, len(want), len(got), name)
				got = got[:0]
				want = want[:0]
			}
			genTask(r, s, l, &res, &now, true)
			require.NoError(t, whole.Merge(&res, emitWant), name)
			if restored != nil {
				require.NoError(t, restored.Merge(&res, emitGot), name)
			} else {
				require.NoError(t, first.Merge(&res, emitGot), name)
			}
		}
		if restored == nil {
			restored = first // k == tasks: snapshot taken at the end below
			snap := first.AppendSnapshot(nil)
			restored = NewAssembler(s, l)
			restored.SetFilter(keep)
			_, err := restored.RestoreSnapshot(snap)
			require.NoError(t, err, name)
			got, want = got[:0], want[:0]
		}
		require.NoError(t, whole.Flush(emitWant), name)
		require.NoError(t, restored.Flush(emitGot), name)
		require.Equal(t, whole.Counters, restored.Counters, name)
		require.Equal(t, len(want), len(got), name)
		for i := range want {
			require.Equal(t, want[i], got[i], "%s window %d", name, i)
		}
	}
}

func TestRestoreRefusesAnotherQuery(t *testing.T) {
	l := &Layout{Groups: 4, Kinds: []AggKind{AggAdd}}
	a := NewAssembler(Spec{Size: 10, Slide: 5, Pane: 5}, l)
	snap := a.AppendSnapshot(nil)
	_, err := NewAssembler(Spec{Size: 10, Slide: 10, Pane: 10}, l).RestoreSnapshot(snap)
	assert.ErrorContains(t, err, "window")
	_, err = NewAssembler(Spec{Size: 10, Slide: 5, Pane: 5}, &Layout{Groups: 4, Kinds: []AggKind{AggMax}}).RestoreSnapshot(snap)
	assert.ErrorContains(t, err, "kind")
	_, err = NewAssembler(Spec{Size: 10, Slide: 5, Pane: 5}, &Layout{Groups: 4, Hashed: true, Kinds: []AggKind{AggAdd}}).RestoreSnapshot(snap)
	assert.ErrorContains(t, err, "hashed")
}

func TestRestoreTruncated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	s := Spec{Size: 6, Slide: 2, Pane: 2}
	for _, hashed := range []bool{false, true} {
		l := &Layout{Groups: 8, Hashed: hashed, Kinds: []AggKind{AggAdd, AggMax}}
		a := NewAssembler(s, l)
		var res TaskResult
		now := int64(0)
		for i := 0; i < 20 || len(a.live) < 2; i++ {
			require.Less(t, i, 1000)
			genTask(r, s, l, &res, &now, true)
			require.NoError(t, a.Merge(&res, func(*Result) error { return nil }))
		}
		snap := a.AppendSnapshot(nil)
		for n := range len(snap) {
			b := NewAssembler(s, l)
			_, err := b.RestoreSnapshot(snap[:n])
			require.Error(t, err, "truncated to %d of %d", n, len(snap))
			assert.Empty(t, b.live)
		}
	}
}

// FuzzRestoreSnapshot: any bytes are refused or restored, never a panic;
// what restores re-encodes to itself.
func FuzzRestoreSnapshot(f *testing.F) {
	r := rand.New(rand.NewPCG(4, 4))
	s := Spec{Size: 6, Slide: 2, Pane: 2}
	layouts := []*Layout{
		{Groups: 8, Kinds: []AggKind{AggAdd, AggMax}},
		{Groups: 8, Hashed: true, Kinds: []AggKind{AggAdd, AggMax}},
		{Groups: 8, Hashed: true, Kinds: invertibleKinds}, // the group dictionary's panes
	}
	for _, l := range layouts {
		a := NewAssembler(s, l)
		var res TaskResult
		now := int64(0)
		for range 10 {
			genTask(r, s, l, &res, &now, true)
			require.NoError(f, a.Merge(&res, func(*Result) error { return nil }))
		}
		f.Add(a.AppendSnapshot(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range layouts {
			a := NewAssembler(s, l)
			rest, err := a.RestoreSnapshot(b)
			if err != nil {
				continue
			}
			if got := a.AppendSnapshot(nil); string(got) != string(b[:len(b)-len(rest)]) {
				// Hashed keys come back in another Touched order only if
				// listed out of slot order; the rows are the same.
				if !l.Hashed {
					t.Fatalf("restored %x re-encodes as %x", b, got)
				}
			}
			_ = a.Flush(func(*Result) error { return nil })
		}
	})
}
