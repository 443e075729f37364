package nexmark

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/temporal"
)

var flatKeys = [3][]string{
	{"id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"},
	{"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category", "extra"},
	{"auction", "bidder", "price", "channel", "url", "dateTime", "extra"},
}

// keysInOrder reads the keys of the JSON object in line, in order.
func keysInOrder(t *testing.T, line []byte) []string {
	d := json.NewDecoder(bytes.NewReader(line))
	tok, err := d.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for d.More() {
		k, err := d.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, d.Decode(&v))
	}
	return keys
}

func checkTime(t *testing.T, v any, want int64) {
	s, ok := v.(string)
	require.True(t, ok, "%v", v)
	require.Len(t, s, len("2015-07-15 00:00:00.000"))
	ms, ok := temporal.ParseTimestamp([]byte(s))
	require.True(t, ok, s)
	require.Equal(t, want, ms)
}

// checkFlat checks one flat JSON object against the event.
func checkFlat(t *testing.T, ev *Event, m map[string]any) {
	num := func(k string) int64 {
		f, ok := m[k].(json.Number)
		require.True(t, ok, "%s: %v", k, m[k])
		n, err := f.Int64()
		require.NoError(t, err)
		return n
	}
	str := func(k string) string {
		s, ok := m[k].(string)
		require.True(t, ok, "%s: %v", k, m[k])
		return s
	}
	require.Len(t, m, len(flatKeys[ev.Table]))
	checkTime(t, m["dateTime"], ev.DateTime)
	switch ev.Table {
	case PersonTable:
		p := &ev.Person
		assert.Equal(t, p.ID, num("id"))
		assert.Equal(t, string(p.Name), str("name"))
		assert.Equal(t, string(p.EmailAddress), str("emailAddress"))
		assert.Equal(t, string(p.CreditCard), str("creditCard"))
		assert.Equal(t, string(p.City), str("city"))
		assert.Equal(t, string(p.State), str("state"))
		assert.Equal(t, string(p.Extra), str("extra"))
	case AuctionTable:
		a := &ev.Auction
		assert.Equal(t, a.ID, num("id"))
		assert.Equal(t, string(a.ItemName), str("itemName"))
		assert.Equal(t, string(a.Description), str("description"))
		assert.Equal(t, a.InitialBid, num("initialBid"))
		assert.Equal(t, a.Reserve, num("reserve"))
		checkTime(t, m["expires"], a.Expires)
		assert.Equal(t, a.Seller, num("seller"))
		assert.Equal(t, a.Category, num("category"))
		assert.Equal(t, string(a.Extra), str("extra"))
	case BidTable:
		b := &ev.Bid
		assert.Equal(t, b.Auction, num("auction"))
		assert.Equal(t, b.Bidder, num("bidder"))
		assert.Equal(t, b.Price, num("price"))
		assert.Equal(t, string(b.Channel), str("channel"))
		assert.Equal(t, string(b.URL), str("url"))
		assert.Equal(t, string(b.Extra), str("extra"))
	}
}

func decode(t *testing.T, line []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var m map[string]any
	require.NoError(t, d.Decode(&m), "%s", line)
	require.False(t, d.More())
	return m
}

func TestJSONLines(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	var flat, kafka []byte
	backslashes := 0
	for range 5000 {
		require.True(t, g.Next(&ev))
		flat = AppendJSON(flat[:0], &ev)
		assert.Equal(t, flatKeys[ev.Table], keysInOrder(t, flat))
		checkFlat(t, &ev, decode(t, flat))
		backslashes += bytes.Count(flat, []byte(`\\`))

		kafka = AppendKafkaJSON(kafka[:0], &ev)
		assert.Equal(t, []string{"event_type", "person", "auction", "bid"}, keysInOrder(t, kafka))
		m := decode(t, kafka)
		assert.Equal(t, json.Number([]byte{byte('0' + ev.Table)}), m["event_type"])
		for _, tb := range Tables {
			v := m[tb.String()]
			if tb != ev.Table {
				assert.Nil(t, v, "%s of a %s event", tb, ev.Table)
				continue
			}
			inner, ok := v.(map[string]any)
			require.True(t, ok)
			checkFlat(t, &ev, inner)
		}
		// The nested object is the flat one.
		assert.Contains(t, string(kafka), string(flat))
	}
	assert.Greater(t, backslashes, 0, "the extra strings hold backslashes, escaped")
}

func TestJSONEscapes(t *testing.T) {
	ev := Event{Table: BidTable, DateTime: 1436918400123}
	ev.Bid = Bid{Auction: 1, Bidder: 2, Price: 3,
		Channel: []byte("a\"b\\c\nd\te\x01f"),
		URL:     []byte("ünï\xffcode"),
		Extra:   []byte{}}
	line := AppendJSON(nil, &ev)
	assert.Equal(t, `{"auction":1,"bidder":2,"price":3,"channel":"a\"b\\c\nd\te\u0001f","url":"ünï\ufffdcode","dateTime":"2015-07-15 00:00:00.123","extra":""}`, string(line))
	m := decode(t, line)
	assert.Equal(t, "a\"b\\c\nd\te\x01f", m["channel"])
}

func TestJSONNoAllocations(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	buf := make([]byte, 0, 4096)
	assert.Zero(t, testing.AllocsPerRun(5000, func() {
		g.Next(&ev)
		buf = AppendJSON(buf[:0], &ev)
		buf = AppendKafkaJSON(buf[:0], &ev)
	}))
}

func TestSpecial8(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			want := c < 0x20 || c == '"' || c == '\\' || c >= 0x80
			got := special8(binary.LittleEndian.Uint64(w))
			require.Equal(t, want, got, "byte %#x at %d", c, pos)
		}
	}
	// Every pair of bytes, in every pair of places (neighbours borrow).
	for c := range 256 {
		for d := range 256 {
			w := []byte("zzzzzzzz")
			w[3], w[4] = byte(c), byte(d)
			want := false
			for _, x := range []int{c, d} {
				want = want || x < 0x20 || x == '"' || x == '\\' || x >= 0x80
			}
			require.Equal(t, want, special8(binary.LittleEndian.Uint64(w)), "%#x %#x", c, d)
		}
	}
}
