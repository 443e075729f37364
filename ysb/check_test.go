package ysb

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKafkaOrder: the merge by head event time, ties by partition, each
// partition's order kept even when its times go down.
func TestKafkaOrder(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 1, AdsPerCampaign: 1, Seed: 1, TuplesPerMs: 1})
	require.NoError(t, err)
	parts := map[int32][]byte{
		0: views(g, 5, 1, 9),
		2: views(g, 3, 7),
		1: views(g, 5, 2),
	}
	var got []int64
	out := KafkaOrder(parts)
	for off := 0; off < len(out); off += TupleSize {
		got = append(got, int64(binary.LittleEndian.Uint64(out[off:])))
	}
	// heads 5,5,3 -> 3(p2); heads 5,5,7 -> 5(p0); heads 1,5,7 -> 1(p0);
	// heads 9,5,7 -> 5(p1); 9,2,7 -> 2(p1); 9,7 -> 7(p2); 9.
	assert.Equal(t, []int64{3, 5, 1, 5, 2, 7, 9}, got)
	assert.Empty(t, KafkaOrder(nil))
}

func TestReadEventLog(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 3, AdsPerCampaign: 2, Seed: 4, TuplesPerMs: 2})
	require.NoError(t, err)
	tuples := make([]byte, 10*TupleSize)
	g.Fill(tuples, 0)
	var log []byte
	want := map[int32][]byte{}
	for i := 0; i < 10; i++ {
		p := int32(i % 3)
		tup := tuples[i*TupleSize : (i+1)*TupleSize]
		log = append(append(append(log, byte('0'+p), '\t'), AppendEventJSON(nil, tup)...), '\n')
		want[p] = append(want[p], tup...)
	}
	el, err := ReadEventLog(bytes.NewReader(log), "events.log")
	require.NoError(t, err)
	assert.Equal(t, int64(10), el.Events)
	assert.Equal(t, want, el.Partitions)

	for _, tc := range []struct{ in, want string }{
		{"0 {}\n", "events.log line 1: want a partition, a tab"},
		{"x\t{}\n", `events.log line 1: bad partition "x"`},
		{"-1\t{}\n", `bad partition "-1"`},
		{"0\t{\"user_id\": 3}\n", "events.log line 1: after the tab:"},
	} {
		_, err := ReadEventLog(strings.NewReader(tc.in), "events.log")
		assert.ErrorContains(t, err, tc.want, tc.in)
	}
}

func TestLatencyOf(t *testing.T) {
	var ws []RedisWindow
	for i := range 100 {
		ws = append(ws, RedisWindow{Start: int64(i) * WindowMs, TimeUpdated: int64(i)*WindowMs + WindowMs + int64(100-i)})
	}
	rand.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
	assert.Equal(t, Latency{Windows: 100, Min: 1, P50: 50, P90: 90, P99: 99, Max: 100}, latencyOf(ws))
	assert.Equal(t, Latency{}, latencyOf(nil))
}

func TestCompareWindows(t *testing.T) {
	a, b := UUID{1}, UUID{2}
	want := []Row{{WindowStart: 0, CampaignID: a, Count: 3}, {WindowStart: 0, CampaignID: b, Count: 1}, {WindowStart: 10000, CampaignID: a, Count: 2}}
	got := []RedisWindow{{Campaign: a, Start: 0, Count: 3}, {Campaign: a, Start: 10000, Count: 5}, {Campaign: b, Start: 20000, Count: 4}, {Campaign: b, Start: 30000, Count: 0}}
	assert.Equal(t, []Mismatch{
		{Campaign: b, Start: 0, Expected: 1, Got: -1},
		{Campaign: a, Start: 10000, Expected: 2, Got: 5},
		{Campaign: b, Start: 20000, Expected: 0, Got: 4},
	}, compareWindows(want, got))
}

// FuzzReadEventLog: any input is read or refused with an error, never a
// panic; what is read re-encodes to the same events.
func FuzzReadEventLog(f *testing.F) {
	g, _ := NewGenerator(DefaultGenConfig())
	tup := make([]byte, TupleSize)
	g.Fill(tup, 7)
	f.Add([]byte("3\t" + string(AppendEventJSON(nil, tup)) + "\n"))
	f.Add([]byte("0\t{}\n\n"))
	f.Add([]byte("\t\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		el, err := ReadEventLog(bytes.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		var n int64
		for p, b := range el.Partitions {
			if p < 0 || len(b)%TupleSize != 0 {
				t.Fatalf("partition %d: %d bytes", p, len(b))
			}
			n += int64(len(b) / TupleSize)
		}
		if n != el.Events {
			t.Fatalf("%d tuples, %d events", n, el.Events)
		}
	})
}
