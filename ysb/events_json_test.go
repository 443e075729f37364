package ysb

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/source"
)

func TestAppendEventJSON(t *testing.T) {
	var tup [TupleSize]byte
	le := binary.LittleEndian
	le.PutUint64(tup[OffEventTime:], 1700000000000)
	copy(tup[OffUserID:], []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0, 1, 2, 3, 4, 5, 6, 7})
	copy(tup[OffAdID:], []byte{0xff, 0xee})
	le.PutUint32(tup[OffAdType:], 2)
	le.PutUint32(tup[OffEventType:], 1)
	le.PutUint32(tup[OffIP:], 0x01020304)
	got := string(AppendEventJSON(nil, tup[:]))
	want := `{"user_id": "01234567-89ab-cdef-0001-020304050607", "page_id": "00000000-0000-0000-0000-000000000000", ` +
		`"ad_id": "ffee0000-0000-0000-0000-000000000000", "ad_type": "sponsored-search", "event_type": "click", ` +
		`"event_time": "1700000000000", "ip_address": "1.2.3.4"}`
	assert.Equal(t, want, got)
	var m map[string]string
	require.NoError(t, json.Unmarshal([]byte(got), &m), "valid JSON")
	assert.Len(t, m, 7)

	le.PutUint32(tup[OffEventType:], 7)
	le.PutUint32(tup[OffIP:], 0xff00fe01)
	le.PutUint64(tup[OffEventTime:], uint64(1<<63))
	got = string(AppendEventJSON(nil, tup[:]))
	assert.Contains(t, got, `"event_type": "7"`)
	assert.Contains(t, got, `"ip_address": "255.0.254.1"`)
	assert.Contains(t, got, `"event_time": "-9223372036854775808"`)
	assert.LessOrEqual(t, len(got), EventJSONMaxLen)
}

func TestAppendEventJSONNoAlloc(t *testing.T) {
	g, err := NewGenerator(DefaultGenConfig())
	require.NoError(t, err)
	tup := make([]byte, TupleSize)
	g.Fill(tup, 12345)
	buf := make([]byte, 0, EventJSONMaxLen)
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { buf = AppendEventJSON(buf[:0], tup) }))
}

// roundTrip encodes tuples as JSON lines, decodes them with JSONLayout
// and returns the decoded tuples.
func roundTrip(t testing.TB, tuples []byte, noFast bool) []byte {
	var src []byte
	for off := 0; off < len(tuples); off += TupleSize {
		src = append(AppendEventJSON(src, tuples[off:off+TupleSize]), '\n')
	}
	d, err := source.NewJSONDecoder(JSONLayout(), source.JSONOptions{NoFastPath: noFast})
	require.NoError(t, err)
	dst := make([]byte, len(tuples))
	for i := range dst {
		dst[i] = 0xa5 // the decoder must write every byte, padding included
	}
	n, consumed, err := d.Decode(dst, src, true)
	require.NoError(t, err)
	require.Equal(t, len(src), consumed)
	require.Equal(t, len(tuples)/TupleSize, n)
	return dst
}

// TestEventJSONRoundTrip: generated tuples, and random ones within the
// labels, through JSON and package source's decoder, both paths.
func TestEventJSONRoundTrip(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 7, AdsPerCampaign: 3, Seed: 9, StartMs: 1_700_000_000_000, TuplesPerMs: 4})
	require.NoError(t, err)
	tuples := make([]byte, 500*TupleSize)
	g.Fill(tuples, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	for off := 250 * TupleSize; off < len(tuples); off += TupleSize {
		p := tuples[off : off+TupleSize]
		randomTuple(r, p)
	}
	for _, noFast := range []bool{false, true} {
		assert.Equal(t, tuples, roundTrip(t, tuples, noFast), "noFast %v", noFast)
	}
}

// randomTuple fills p with random fields within the labels, zero padding.
func randomTuple(r *rand.Rand, p []byte) {
	clear(p)
	le := binary.LittleEndian
	le.PutUint64(p[OffEventTime:], r.Uint64())
	for i := OffUserID; i < OffAdType; i++ {
		p[i] = byte(r.Uint32())
	}
	le.PutUint32(p[OffAdType:], uint32(r.IntN(len(AdTypes))))
	le.PutUint32(p[OffEventType:], uint32(r.IntN(len(EventTypes))))
	le.PutUint32(p[OffIP:], r.Uint32())
}

func FuzzEventJSONRoundTrip(f *testing.F) {
	f.Add(uint64(0), int64(0), []byte{}, uint8(0), uint8(0), uint32(0))
	f.Add(uint64(1), int64(-1), []byte{0xff, 1, 2}, uint8(4), uint8(2), uint32(0xffffffff))
	f.Add(uint64(1<<63), int64(1<<62), []byte("0123456789abcdef0123456789abcdef0123456789abcdef"), uint8(3), uint8(1), uint32(0x7f000001))
	f.Fuzz(func(t *testing.T, seed uint64, ts int64, ids []byte, adType, eventType uint8, ip uint32) {
		var p [TupleSize]byte
		le := binary.LittleEndian
		le.PutUint64(p[OffEventTime:], uint64(ts))
		copy(p[OffUserID:OffAdType], ids)
		le.PutUint32(p[OffAdType:], uint32(adType)%uint32(len(AdTypes)))
		le.PutUint32(p[OffEventType:], uint32(eventType)%uint32(len(EventTypes)))
		le.PutUint32(p[OffIP:], ip)
		for _, noFast := range []bool{false, true} {
			got := roundTrip(t, p[:], noFast)
			if string(got) != string(p[:]) {
				t.Fatalf("noFast %v: %x\nwant %x\njson %s", noFast, got, p, AppendEventJSON(nil, p[:]))
			}
		}
		_ = seed
	})
}
