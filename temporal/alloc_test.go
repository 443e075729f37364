package temporal

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestZeroAllocations(t *testing.T) {
	in := [][]byte{[]byte("2024-03-01T10:00:01.250+02:00"), []byte("2024-03-01 10:00:01.250"), []byte("2024-03-01")}
	buf := make([]byte, 0, 64)
	f := MustCompileFormat("EEEE, d MMMM yyyy 'at' hh:mm:ss.SSS a")
	for name, fn := range map[string]func(){
		"ParseTimestamp": func() {
			for _, b := range in {
				ParseTimestamp(b)
			}
		},
		"ParseDate":       func() { ParseDate(in[2]) },
		"AppendTimestamp": func() { buf = AppendTimestamp(buf[:0], -1234567890123) },
		"AppendDate":      func() { buf = AppendDate(buf[:0], -12345) },
		"Format.Append":   func() { buf = f.Append(buf[:0], 1709287201250) },
		"Extract": func() {
			for u := Year; u <= Epoch; u++ {
				Extract(u, 1709287201250)
			}
		},
		"ParseUnit": func() { ParseUnit("millennium") },
	} {
		assert.Zero(t, testing.AllocsPerRun(100, fn), name)
	}
}
