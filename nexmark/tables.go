package nexmark

import (
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/saber-hx/saber-hx/strview"
)

// The word lists of PersonGenerator and BidGenerator. They are few on
// purpose: queries that filter on a state or a city find matches on small
// data sets.
var (
	firstNames  = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames   = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	usCities    = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	usStates    = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// tablesSeed seeds the tables that the Java generator draws once per JVM
// from an unseeded random (the hot URLs, the channels' URLs, the extra
// text): here they are the same in every process and for every Seed.
const tablesSeed = 0x6e65786d61726b // "nexmark"

// tables are the strings that events share: names, cities, states,
// channels and their URLs, and the text that extra strings are cut from.
// They live in one mapping outside the Go heap that is never freed, so
// that a tuple's view may reference them (strview.PutRef) for as long as
// the process runs.
type tables struct {
	mem        []byte
	lo, hi     uintptr
	names      [][]byte // firstNames[i] + " " + lastNames[j] at i*len(lastNames)+j
	cities     [][]byte
	states     [][]byte
	hotChan    [][]byte
	hotURLs    [][]byte
	channels   [][]byte // "channel-<i>"
	chanURLs   [][]byte
	chanIDs    []int32 // the channel_id in chanURLs[i]; noChannelID where none
	extraPool  []byte
	staticArea *strview.Arena
}

// noChannelID marks a channel whose URL carries no channel_id (one in ten).
const noChannelID = -1 << 31

var (
	sharedOnce sync.Once
	shared     *tables
)

// static returns the shared tables, built on first use.
func static() *tables {
	sharedOnce.Do(func() { shared = buildTables() })
	return shared
}

type span struct{ off, n int }

func buildTables() *tables {
	var buf []byte
	add := func(s []byte) span {
		sp := span{len(buf), len(s)}
		buf = append(buf, s...)
		return sp
	}
	addAll := func(ss []string) []span {
		out := make([]span, len(ss))
		for i, s := range ss {
			out[i] = add([]byte(s))
		}
		return out
	}
	var names []string
	for _, f := range firstNames {
		for _, l := range lastNames {
			names = append(names, f+" "+l)
		}
	}
	nameSp := addAll(names)
	citySp := addAll(usCities)
	stateSp := addAll(usStates)
	hotChanSp := addAll(hotChannels)

	r := rng{s: tablesSeed}
	var tmp []byte
	hotURLSp := make([]span, len(hotChannels))
	for i := range hotURLSp {
		tmp = appendBaseURL(tmp[:0], &r)
		hotURLSp[i] = add(tmp)
	}
	chanSp := make([]span, Channels)
	chanURLSp := make([]span, Channels)
	chanIDs := make([]int32, Channels)
	for i := range Channels {
		tmp = appendBaseURL(tmp[:0], &r)
		chanIDs[i] = noChannelID
		if r.intn(10) > 0 {
			id := channelID(i)
			chanIDs[i] = id
			tmp = append(tmp, "&channel_id="...)
			tmp = strconv.AppendInt(tmp, int64(id), 10)
		}
		chanURLSp[i] = add(tmp)
		tmp = strconv.AppendInt(append(tmp[:0], "channel-"...), int64(i), 10)
		chanSp[i] = add(tmp)
	}
	poolSp := span{len(buf), ExtraPoolSize}
	buf = appendExactLetters(buf, &r, ExtraPoolSize)

	a := strview.NewArena(len(buf))
	mem := a.Copy(buf)
	t := &tables{mem: mem, staticArea: a, chanIDs: chanIDs}
	t.lo = uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	t.hi = t.lo + uintptr(len(mem))
	get := func(sp span) []byte { return mem[sp.off : sp.off+sp.n : sp.off+sp.n] }
	getAll := func(sps []span) [][]byte {
		out := make([][]byte, len(sps))
		for i, sp := range sps {
			out[i] = get(sp)
		}
		return out
	}
	t.names = getAll(nameSp)
	t.cities = getAll(citySp)
	t.states = getAll(stateSp)
	t.hotChan = getAll(hotChanSp)
	t.hotURLs = getAll(hotURLSp)
	t.channels = getAll(chanSp)
	t.chanURLs = getAll(chanURLSp)
	t.extraPool = get(poolSp)
	return t
}

// holds reports whether s lies in the tables' mapping, whose views may
// reference it for the life of the process.
func (t *tables) holds(s []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return p >= t.lo && p+uintptr(len(s)) <= t.hi
}

// channelID is the channel_id of channel i: the absolute value of i's 32
// bits reversed, as a Java int (Math.abs(Integer.reverse(i))), so that
// channel 1's is -2147483648, the one int whose absolute value is itself.
func channelID(i int) int32 {
	v := int32(bits.Reverse32(uint32(i)))
	if v < 0 {
		v = -v // -2^31 stays -2^31, as in Java
	}
	return v
}

// ChannelID returns the channel_id that the URL of channel-<i> carries and
// whether it carries one (nine channels in ten do); the hot channels'
// URLs carry none (q21 maps their names to 0 to 3).
func ChannelID(i int) (id int32, ok bool) {
	if i < 0 || i >= Channels {
		return 0, false
	}
	id = static().chanIDs[i]
	return id, id != noChannelID
}

// appendBaseURL appends a URL of the Java generator's shape,
// https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1, with a, b and c
// random strings of 3 or 4 letters and underscores.
func appendBaseURL(dst []byte, r *rng) []byte {
	dst = append(dst, "https://www.nexmark.com/"...)
	for range 3 {
		dst = appendRandomString(dst, r, 5, '_')
		dst = append(dst, '/')
	}
	return append(dst, "item.htm?query=1"...)
}

// appendRandomString appends StringsGenerator.nextString(max, special): a
// string of MinStringLength to max-1 characters, each special with
// probability 1/13 and otherwise a letter a-z, trimmed of spaces at both
// ends (Java's trim; only a space special can be trimmed). Java draws two
// random ints a character; here one 64-bit draw makes four characters,
// each a digit d in [0, 338) of its fraction: special for d < 26 (1/13),
// else letter (d-26) mod 26 (uniform over the 312 others).
func appendRandomString(dst []byte, r *rng, max int64, special byte) []byte {
	n := int(MinStringLength + r.intn(max-MinStringLength))
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	for i := 0; i < len(out); i += 4 {
		u := r.next()
		for k := i; k < i+4 && k < len(out); k++ {
			var d uint64
			d, u = bits.Mul64(u, 13*26)
			c := digitLetter[d]
			if d < 26 {
				c = special
			}
			out[k] = c
		}
	}
	if special != ' ' {
		return dst
	}
	end := len(dst)
	for end > start && dst[end-1] == ' ' {
		end--
	}
	first := start
	for first < end && dst[first] == ' ' {
		first++
	}
	n2 := copy(dst[start:], dst[first:end])
	return dst[:start+n2]
}

// digitLetter[d] is the letter of digit d >= 26: 'a' + (d-26) mod 26.
var digitLetter = func() (t [13 * 26]byte) {
	for d := 26; d < len(t); d++ {
		t[d] = byte('a' + (d-26)%26)
	}
	return t
}()

// appendExactLetters appends n characters by the rule of
// StringsGenerator.nextExactString: six characters from each 32-bit
// random int r, 'a' + r%26 and then r /= 26. Java's int is signed and
// its remainder takes the dividend's sign, so half the ints give
// characters below 'a': the text holds 'H' to 'z', with '[', '\\', ']',
// '^', '_' and '`' among them, as the project's extra strings do.
func appendExactLetters(dst []byte, r *rng, n int) []byte {
	for n > 0 {
		v := r.int32()
		for k := 0; k < 6 && n > 0; k++ {
			dst = append(dst, byte('a'+v%26))
			v /= 26
			n--
		}
	}
	return dst
}
