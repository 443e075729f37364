package bench

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/sink"
)

// checkPartitions checks q10's partitioned output of a validation run
// over the events of nc against the generator's bids: each partition
// (dt=yyyy-MM-dd/hm=HH%3Amm of the bid's dateTime) holds as many rows as
// there are bids of that minute, there is no other, and every partition
// has its success file (the run ended: every partition is committed).
// mismatch says what differs ("" where nothing does).
func checkPartitions(out partOutput, nc nexmark.Config) (mismatch string, err error) {
	g, err := nexmark.New(nc)
	if err != nil {
		return "", err
	}
	want := map[string]int{}
	var ev nexmark.Event
	var rel []byte
	for g.Next(&ev) {
		if ev.Table != nexmark.BidTable {
			continue
		}
		t := time.UnixMilli(ev.DateTime).UTC()
		rel = sink.AppendPartitionSegment(rel[:0], "dt", t.Format("2006-01-02"), false, "")
		rel = append(rel, '/')
		rel = sink.AppendPartitionSegment(rel, "hm", t.Format("15:04"), false, "")
		want[string(rel)]++
	}
	files, err := sink.ExistingPartitions(out.dir, out.success)
	if err != nil {
		return "", fmt.Errorf("read the partitions of %s: %w", out.dir, err)
	}
	got := map[string]int{}
	for rel, fs := range files {
		for _, f := range fs {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			got[rel] += bytes.Count(b, []byte{'\n'})
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(want)) {
		if got[rel] != want[rel] {
			return fmt.Sprintf("partition %s holds %d rows, the generator made %d bids of its minute", rel, got[rel], want[rel]), nil
		}
		if out.success != "" {
			if _, err := os.Stat(filepath.Join(out.dir, rel, out.success)); err != nil {
				return fmt.Sprintf("partition %s has no %s at the end of the run", rel, out.success), nil
			}
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[rel]; !ok {
			return fmt.Sprintf("partition %s holds %d rows, and the generator made no bid of its minute", rel, got[rel]), nil
		}
	}
	if len(want) == 0 {
		return "no bids: nothing to check the partitions against", nil
	}
	return "", nil
}
