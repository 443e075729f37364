package nexmark

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

func TestSchemas(t *testing.T) {
	type col struct {
		name string
		typ  query.Type
		off  int
		time bool
	}
	want := map[Table][]col{
		PersonTable: {{"dateTime", query.Int64, 0, true}, {"id", query.Int64, 8, false},
			{"name", query.String, 16, false}, {"emailAddress", query.String, 32, false},
			{"creditCard", query.String, 48, false}, {"city", query.String, 64, false},
			{"state", query.String, 80, false}, {"extra", query.String, 96, false}},
		AuctionTable: {{"dateTime", query.Int64, 0, true}, {"id", query.Int64, 8, false},
			{"itemName", query.String, 16, false}, {"description", query.String, 32, false},
			{"initialBid", query.Int64, 48, false}, {"reserve", query.Int64, 56, false},
			{"expires", query.Int64, 64, true}, {"seller", query.Int64, 72, false},
			{"category", query.Int64, 80, false}, {"extra", query.String, 88, false}},
		BidTable: {{"dateTime", query.Int64, 0, true}, {"auction", query.Int64, 8, false},
			{"bidder", query.Int64, 16, false}, {"price", query.Int64, 24, false},
			{"channel", query.String, 32, false}, {"url", query.String, 48, false},
			{"extra", query.String, 64, false}},
	}
	for _, tb := range Tables {
		s := tb.Schema()
		assert.Equal(t, tb.TupleSize(), s.TupleSize)
		require.Len(t, s.Attrs, len(want[tb]))
		end := 0
		for i, c := range want[tb] {
			a := s.Attrs[i]
			assert.Equal(t, c.name, a.Name)
			assert.Equal(t, c.typ, a.Type, c.name)
			assert.Equal(t, c.off, a.Offset, c.name)
			assert.Equal(t, c.time, a.Logical == query.Time, c.name)
			assert.False(t, a.Nullable, c.name)
			end = a.Offset + a.Size
		}
		assert.Equal(t, s.TupleSize, end, "no padding")
	}
	assert.Equal(t, PersonSchema().Attrs, PersonTable.Schema().Attrs)
}

func sameEvent(t *testing.T, want, got *Event) {
	t.Helper()
	wantLine := string(AppendJSON(nil, want))
	require.Equal(t, wantLine, string(AppendJSON(nil, got)))
}

func TestTupleRoundTrip(t *testing.T) {
	a := strview.NewArena(0)
	defer a.Free()
	g := newGen(t, DefaultConfig())
	var ev, back Event
	buf := make([]byte, 128)
	var copied, referenced int
	st := static()
	for range 30000 {
		require.True(t, g.Next(&ev))
		tup := buf[:ev.Table.TupleSize()]
		EncodeTuple(tup, &ev, a)
		DecodeTuple(&back, ev.Table, tup)
		sameEvent(t, &ev, &back)
		assert.Equal(t, ev.Table, back.Table)
		assert.Equal(t, int64(-1), back.ID)
		// The shared strings are referenced, not copied.
		for _, v := range viewsOf(tup, ev.Table) {
			s := strview.Bytes(v)
			if len(s) <= strview.MaxInline {
				continue
			}
			if st.holds(s) {
				referenced++
			} else {
				copied++
			}
		}
	}
	assert.Greater(t, referenced, 30000) // the extras and URLs
	assert.Greater(t, copied, 600*2)     // the descriptions and credit cards
	// Only the events' own strings went to the arena: credit cards,
	// descriptions, some names and emails.
	assert.Less(t, a.Bytes(), 600*100+600*3*(20+100))
}

func viewsOf(tup []byte, tb Table) [][]byte {
	var out [][]byte
	for _, at := range tb.Schema().Attrs {
		if at.Type == query.String {
			out = append(out, tup[at.Offset:at.Offset+strview.Size])
		}
	}
	return out
}

// An Event the caller filled has its long strings copied, never
// referenced from the Go heap.
func TestEncodeCallersEvent(t *testing.T) {
	a := strview.NewArena(0)
	defer a.Free()
	ev := Event{Table: PersonTable, DateTime: 5}
	ev.Person = Person{ID: 7, Name: []byte("a name longer than twelve"), EmailAddress: []byte("x@y.z"),
		CreditCard: []byte("1234 5678 9012 3456"), City: []byte("Kent"), State: []byte("WA"), Extra: make([]byte, 300)}
	tup := make([]byte, PersonTupleSize)
	EncodeTuple(tup, &ev, a)
	var back Event
	DecodeTuple(&back, PersonTable, tup)
	sameEvent(t, &ev, &back)
	assert.NotEqual(t, uintptr(unsafe.Pointer(unsafe.SliceData(ev.Person.Name))), uintptr(unsafe.Pointer(unsafe.SliceData(back.Person.Name))))
	assert.Equal(t, 25+19+300, a.Bytes())
	assert.Panics(t, func() { EncodeTuple(tup, &ev, nil) })

	// A bid's strings are all shared or short: no arena needed.
	g := newGen(t, DefaultConfig())
	for range 1000 {
		g.NextOf(BidTable, &ev)
		EncodeTuple(tup[:BidTupleSize], &ev, nil)
	}
}

func TestFillTuples(t *testing.T) {
	a := strview.NewArena(0)
	defer a.Free()
	cfg := DefaultConfig()
	cfg.Events = 5000
	for _, tb := range Tables {
		g, ref := newGen(t, cfg), newGen(t, cfg)
		size := tb.TupleSize()
		buf := make([]byte, 37*size+size/2)
		var ev, back Event
		total := 0
		for {
			n := g.FillTuples(buf, tb, a)
			for i := range n {
				require.True(t, ref.NextOf(tb, &ev))
				DecodeTuple(&back, tb, buf[i*size:(i+1)*size])
				sameEvent(t, &ev, &back)
			}
			total += n
			if n < 37 {
				break
			}
		}
		assert.False(t, ref.NextOf(tb, &ev))
		assert.Equal(t, int(5000/50*[3]int64{1, 3, 46}[tb]), total)
	}
}

func TestEncodeNoAllocations(t *testing.T) {
	a := strview.NewArena(0)
	defer a.Free()
	g := newGen(t, DefaultConfig())
	var ev Event
	buf := make([]byte, 128)
	g.Next(&ev)
	EncodeTuple(buf, &ev, a)
	assert.Zero(t, testing.AllocsPerRun(20000, func() {
		g.Next(&ev)
		EncodeTuple(buf, &ev, a)
	}))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		g.FillTuples(buf[:], BidTable, a)
	}))
}
