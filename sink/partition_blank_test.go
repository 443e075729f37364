package sink

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPartitionSegmentUnicodeBlank: a value of Java's whitespace past
// ASCII only (Flink's isNullOrWhitespaceOnly: Character.isWhitespace,
// the no-break spaces excepted) is the default partition.
func TestPartitionSegmentUnicodeBlank(t *testing.T) {
	for v, blank := range map[string]bool{
		"\u3000": true, " \u2003\t": true, "\u1680": true, "\u2028\u2029": true, "\u205f": true, "\u200a": true,
		"\u00a0": false, "\u2007": false, "\u202f": false, "\u200b": false, "\u3000x": false, "é": false, "\u3001": false,
	} {
		got := string(AppendPartitionSegment(nil, "c", v, false, "__DEFAULT_PARTITION__"))
		want := "c=" + v
		if blank {
			want = "c=__DEFAULT_PARTITION__"
		}
		assert.Equal(t, want, got, "%q", v)
		assert.Equal(t, want, string(AppendPartitionSegment(nil, "c", []byte(v), false, "__DEFAULT_PARTITION__")), "%q", v)
	}
}
