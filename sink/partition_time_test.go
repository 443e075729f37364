package sink

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPartitionTimeAsFlink: a partition's time is read as Flink's
// DefaultPartTimeExtractor reads it: fields of one or two digits
// ('$year-$month-$day $hour:00:00' of integer columns), a fraction of
// the second, lenient ranges; an escaped value (12%3A34) unescaped.
func TestPartitionTimeAsFlink(t *testing.T) {
	cases := []struct {
		cols    []string
		pattern string
		rel     string
		want    time.Time
		ok      bool
	}{
		{[]string{"dt", "hm"}, "$dt $hm:00", "dt=2015-07-15/hm=12%3A34", time.Date(2015, 7, 15, 12, 34, 0, 0, time.UTC), true},
		{[]string{"year", "month", "day", "hour"}, "$year-$month-$day $hour:00:00", "year=2020/month=6/day=5/hour=3", time.Date(2020, 6, 5, 3, 0, 0, 0, time.UTC), true},
		{[]string{"dt"}, "", "dt=2020-6-5", time.Date(2020, 6, 5, 0, 0, 0, 0, time.UTC), true},
		{[]string{"dt"}, "", "dt=2020-06-05 1:2:3.5", time.Date(2020, 6, 5, 1, 2, 3, 5e8, time.UTC), true},
		{[]string{"dt"}, "", "dt=2020-06-05 24:00:00", time.Date(2020, 6, 6, 0, 0, 0, 0, time.UTC), true},
		{[]string{"dt"}, "", "dt=__DEFAULT_PARTITION__", time.Time{}, false},
		{[]string{"dt"}, "", "dt=2020-06-05 1:2", time.Time{}, false},
		{[]string{"dt"}, "", "dt=2020-006-05", time.Time{}, false},
		{[]string{"dt"}, "", "dt=2020-06-05x", time.Time{}, false},
	}
	for _, c := range cases {
		p, err := CreatePartitioned(PartitionConfig{Dir: t.TempDir(), Columns: c.cols, Pattern: c.pattern, Trigger: true})
		require.NoError(t, err)
		ms, ok := p.partitionTime(c.rel)
		if assert.Equal(t, c.ok, ok, c.rel) && ok {
			assert.Equal(t, c.want.UnixMilli(), ms, "%s: %v", c.rel, time.UnixMilli(ms).UTC())
		}
	}
}
