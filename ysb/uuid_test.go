package ysb

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUUIDRoundTrip(t *testing.T) {
	const s = "956eeb2f-2632-d7bd-03f1-66b233e3ef28"
	u, err := ParseUUID(s)
	require.NoError(t, err)
	assert.Equal(t, UUID{0x95, 0x6e, 0xeb, 0x2f, 0x26, 0x32, 0xd7, 0xbd, 0x03, 0xf1, 0x66, 0xb2, 0x33, 0xe3, 0xef, 0x28}, u)
	assert.Equal(t, s, u.String())

	upper, err := ParseUUID(strings.ToUpper(s))
	require.NoError(t, err)
	assert.Equal(t, u, upper)
	assert.Equal(t, s, upper.String(), "String is lowercase whatever the input case")
}

func TestParseUUIDErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "length 0, want 36"},
		{"xyz", `parse UUID "xyz": length 3, want 36`},
		{"956eeb2f-2632-d7bd-03f1-66b233e3ef2", "length 35"},
		{"956eeb2f-2632-d7bd-03f1-66b233e3ef288", "length 37"},
		{"956eeb2fx2632-d7bd-03f1-66b233e3ef28", "offset 8: want '-'"},
		{"956eeb2f-2632-d7bd-03f1066b233e3ef28", "offset 23: want '-'"},
		{"956eeb2g-2632-d7bd-03f1-66b233e3ef28", `offset 7: 'g' is not a hex digit`},
		{"g56eeb2f-2632-d7bd-03f1-66b233e3ef28", `offset 0: 'g' is not a hex digit`},
		{"956eeb2f-2632-d7bd-03f1-66b233e3ef2 ", `offset 35: ' ' is not a hex digit`},
		{"956eeb2f2632-d7bd-03f1-66b233e3ef28-", "offset 8: want '-'"},
	} {
		_, err := ParseUUID(tc.in)
		require.Error(t, err, "input %q", tc.in)
		assert.Contains(t, err.Error(), tc.want, "input %q", tc.in)
	}
}

// The tuple layout stores ids in text order so that sorting rows by id bytes
// sorts them as their printed form: check that on random ids.
func TestUUIDTextOrderIsByteOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]UUID, 500)
	for i := range ids {
		for j := range ids[i] {
			ids[i][j] = byte(r.Uint32())
		}
	}
	ids[1] = ids[0]
	ids[1][15] ^= 1 // neighbours that differ only in the last byte
	for i := range ids {
		for j := range ids {
			a, b := ids[i], ids[j]
			assert.Equal(t, bytes.Compare(a[:], b[:]), strings.Compare(a.String(), b.String()), "%s vs %s", a, b)
		}
		back, err := ParseUUID(ids[i].String())
		require.NoError(t, err)
		assert.Equal(t, ids[i], back)
	}
}
